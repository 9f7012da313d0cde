"""The discrete-event engine (:func:`hwsim.sim.engine.simulate`) and its parts.

``engine`` (the event loop), ``resources`` (cores, DMA channels, memory bandwidth), ``frames``
(admission and per-core dispatch of several frames), ``blocks`` (an op's timing), ``plan`` (the
schedule resolved by index), ``records`` (the trace), ``splitting`` (ops split across cores),
``options`` (what a caller sets).
"""

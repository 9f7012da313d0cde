"""``hwsim optimize``: a staged search over graph rewrites and per-op mappings that remembers every
trial in an experience database (:mod:`hwsim.studies.optimize.db`) and carries it to the next chip
(:mod:`hwsim.studies.optimize.features`, :mod:`~hwsim.studies.optimize.prior`,
:mod:`~hwsim.studies.optimize.transfer`)."""

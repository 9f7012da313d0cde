"""The discrete-event engine: resources, the event loop, the records it leaves, op splitting."""

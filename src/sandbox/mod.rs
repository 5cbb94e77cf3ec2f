//! Loopback HTTPS agents that play named scenarios, for tests and the demo.

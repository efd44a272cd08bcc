//! Unit tests of the LLM judge against a loopback mock server.

"""A stand-in for GitHub on this machine: the fake the tests and `perfbot try` share."""

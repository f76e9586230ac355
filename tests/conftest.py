"""Fixtures shared by several test modules."""

# The real iperf3 server fixture (`iperf3_server`), for the live and the workflow tests.
pytest_plugins = ["tests.iperf3"]

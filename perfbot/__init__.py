"""perfbot: network-performance comparisons on pull requests."""

"""The pure core: report files -> measurements -> a comparison -> markdown, text, JSON.

No I/O, no network, no database: everything here takes plain values and returns plain
values, and importing it loads no network, database or server library (tests/test_layers.py).
"""

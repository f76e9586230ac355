"""Small helpers with no knowledge of GitHub, the store or the engine.

Single-flight calls (``shared``), holding a lease while work runs (``keepalive``), retry
delays (``retry``), structured logs (``logs``) and Prometheus metrics (``metrics``). They
import nothing else from perfbot, so every layer may use them.
"""

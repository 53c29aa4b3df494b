"""`@frozen`, the package's immutable records: the gate's name for `plugin/frozen.py`.

It lives in the plugin's folder because the plugin, staged into each test child under a
fresh package name (`run/staging.py`), may import nothing of the gate's; there its records
cost the child's start as little as the gate's cost the gate's.
"""

from three_ledger.plugin.frozen import frozen

__all__ = ["frozen"]

"""Running raybench on a real Ray cluster: what a cluster offers, whether a job fits, `raybench submit`."""

from raybench.cluster.fit import FitVerdict, Inventory, NodeInfo, check_fit, inventory_from_nodes

__all__ = ["FitVerdict", "Inventory", "NodeInfo", "check_fit", "inventory_from_nodes"]

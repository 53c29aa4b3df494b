"""`selftest`: the scratch clone, the product mutations and the plants it judges the gate by."""

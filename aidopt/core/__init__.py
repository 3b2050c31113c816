"""The AID algorithm: the model contract, partitions, certificates, results, the registry of
names, solver routes and the driver that iterates aggregate → solve → evaluate → certify → split."""

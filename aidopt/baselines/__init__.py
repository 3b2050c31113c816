"""Methods that are not AID, with the same command-line and JSON conventions: the baselines a
model is compared with (CutS3VM for S3VM). Each module names its method class ``METHOD``; the
registry finds it (:mod:`aidopt.core.registry`)."""

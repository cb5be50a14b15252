"""The pykueue controller: informers, the admission engine and the job integration."""

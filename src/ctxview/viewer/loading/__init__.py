"""Reading a transcript from the store: the loader, the bodies it caches, the signals it sends."""

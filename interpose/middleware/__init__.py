"""What goes into the onion: built-in guards (and, later, process and command hooks)."""

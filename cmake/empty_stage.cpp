// Compiled into a stage library that has no sources of its own yet.

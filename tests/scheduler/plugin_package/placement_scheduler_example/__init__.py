"""An out-of-tree plugin package, installed by the plugin test."""

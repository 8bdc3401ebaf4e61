"""Icons, style sheets and the desktop file, shipped inside the package as mha_explorer.resources."""

// Placeholder translation unit so fxc_passes has a source until the first pass lands.

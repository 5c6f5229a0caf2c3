"""What every mmcloak package shares, whatever it does (cloak, render, speech, mmbert and attacks all import
these, so they live in the leftmost package): records and files (``io``), parameters declared once and
checked (``params``), progress bars (``progress``), model folders and files (``models``), what every command
line does (``commands``), the user's cache folder (``cache``), lazy exports (``lazy``), worker processes
(``workers``) and weights assembled from package registries (``weights``)."""

"""The synthetic generator's data tables, data only: the product types by source category (cell_phones,
electronics, beauty, office) and the value pools they share (pools), names (names) and review phrases
(reviews)."""

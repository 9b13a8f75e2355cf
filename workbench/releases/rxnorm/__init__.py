"""RxNorm (http://www.nlm.nih.gov/research/umls/rxnorm) from its RRF full release."""

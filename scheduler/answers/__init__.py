"""What a decision answers: the selections and the explanation, as the wire shows them."""

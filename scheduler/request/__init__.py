"""What a caller asks for: the schedule request, flavors and their extra specs."""

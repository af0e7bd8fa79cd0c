"""The scheduler service: Placement candidates -> filters -> weighers -> claim, explained."""

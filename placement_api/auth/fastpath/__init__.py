"""What the policy layer takes from oslo.policy's private parts, fenced."""

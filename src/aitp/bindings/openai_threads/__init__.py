"""HTTP routes, thin: parse, authenticate, call a service function, return its object."""

"""Jobs: Job_ID allocation, the persistent desired state, and the manager the API calls."""

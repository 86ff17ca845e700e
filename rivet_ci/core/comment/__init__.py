"""The comment's view model, its marker, the since-last-push digest."""

"""The one boundary every byte leaves through: the redactor, no-follow writes, rendering."""

"""MCP servers the MCP tests start: built with the SDK's own server API, run as processes."""

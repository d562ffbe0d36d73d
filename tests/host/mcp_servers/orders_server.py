"""The orders MCP server the agents guide's first example names: ``python orders_server.py``.

Runs over stdio, on the SDK's ``MCPServer``. One tool, ``track_shipment``, answers from a
fixed table, so a test can check what the agent's model received.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

server: MCPServer[Any] = MCPServer("orders")


class Shipment(BaseModel):
    order_id: int
    carrier: str
    eta: str


_SHIPMENTS = {1042: Shipment(order_id=1042, carrier="DHL", eta="2026-05-04")}


@server.tool()
def track_shipment(order_id: int) -> Shipment:
    """Where an order's parcel is: its carrier and expected delivery date."""
    shipment = _SHIPMENTS.get(order_id)
    if shipment is None:
        raise ValueError(f"no shipment for order {order_id}")
    return shipment


if __name__ == "__main__":
    server.run("stdio")

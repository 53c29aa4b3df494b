"""Functions for parsing Links"""

__all__ = ("parseLinkDestination", "parseLinkLabel", "parseLinkTitle")
from .parse_link_destination import parseLinkDestination
from .parse_link_label import parseLinkLabel
from .parse_link_title import parseLinkTitle

__all__ = (
    "StateCore",
    "block",
    "inline",
    "linkify",
    "normalize",
    "replace",
    "smartquotes",
    "text_join",
)

from .block import block
from .inline import inline
from .linkify import linkify
from .normalize import normalize
from .replacements import replace
from .smartquotes import smartquotes
from .state_core import StateCore
from .text_join import text_join

"""Role cards: Jinja2 templates rendered with StrictUndefined."""

from __future__ import annotations

import difflib
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarmflow.core.errors import TemplateError

if TYPE_CHECKING:
    import jinja2

_CARD_SUFFIXES = (".j2", ".jinja", ".jinja2", ".md", ".txt")


@lru_cache(maxsize=8)
def _environment(search_path: tuple[str, ...]) -> jinja2.Environment:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(list(search_path)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
    )


def is_card_path(card: str) -> bool:
    return "\n" not in card and card.endswith(_CARD_SUFFIXES)


def render_card(card: str, variables: dict[str, Any], search_path: tuple[str, ...] = (".",)) -> str:
    """Render a card (a template string or a file name found on `search_path`).

    Raises:
        TemplateError: naming the template and the missing variable or syntax error.
    """
    import jinja2

    env = _environment(search_path)
    label = card if is_card_path(card) else "<inline card>"
    try:
        template = env.get_template(card) if is_card_path(card) else env.from_string(card)
        return template.render(**variables)
    except jinja2.UndefinedError as exc:
        hint = _closest_variable(exc.message or "", variables)
        raise TemplateError(
            f"role card {label}: {exc.message}{hint}; pass it as a card variable"
        ) from None
    except jinja2.TemplateNotFound:
        where = ", ".join(str(Path(p).resolve()) for p in search_path)
        raise TemplateError(f"role card {card!r} not found (searched {where})") from None
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateError(f"role card {label}, line {exc.lineno}: {exc.message}") from None


def _closest_variable(message: str, variables: dict[str, Any]) -> str:
    """` (did you mean 'task'?)` when the undefined name is close to a variable given."""
    missing = message.split("'")[1] if message.count("'") >= 2 else ""
    close = difflib.get_close_matches(missing, list(variables), n=1) if missing else []
    return f" (did you mean {close[0]!r}?)" if close else ""

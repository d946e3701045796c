"""Server-Sent Events (the HTML standard's text/event-stream), as GET /jobs/{id}/events sends them."""
import json


def parse_sse(lines):
    """Yields (event, data, id) for each event of an iterable of lines (str or bytes, with or without their
    line ends): "event:" names it (default "message"), "data:" lines join with newlines, "id:" sets the last
    id, a line starting with ":" is a comment (the keepalive), a blank line ends an event; an event without
    data is not dispatched. data is the JSON value when it parses, else the text."""
    event, data, last_id = "", [], None
    for raw in lines:
        line = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        line = line.rstrip("\r\n")
        if not line:
            if data:
                text = "\n".join(data)
                try:
                    value = json.loads(text)
                except ValueError:
                    value = text
                yield event or "message", value, last_id
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        field, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if field == "event":
            event = value
        elif field == "data":
            data.append(value)
        elif field == "id" and "\0" not in value:
            last_id = value

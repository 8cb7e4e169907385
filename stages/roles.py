"""Record roles and the small codes postings carry for them.

The index writes the codes and search and the hooks read them, so the table
lives here, once, in a module that imports nothing.
"""

# Roles a reader may emit. developer/system turns are dropped by readers.
SPEECH_ROLES = ("user", "assistant")
WORK_ROLES = ("command", "files", "edit")
# title: a name the harness or a person gave the session (normalize.names), a record per name
ROLES = ("user", "assistant", "tool-output", "command", "files", "edit", "summary", "note", "title")
# Codes 5 to 7 are work records. (Codes are stored: a new role takes the next one.)
ROLE_CODES = {"user": 0, "assistant": 1, "tool-output": 2, "summary": 3, "note": 4, "command": 5, "files": 6, "edit": 7,
              "title": 8}
WORK_CODE_MIN = 5

"""The child of ``execute_code``: fetch the script from the agent and run it as ``__main__``.

Started as ``python child.py``, so this folder is on ``sys.path`` and ``import hermes_tools``
works. A traceback shows the script's frames only (named ``<execute_code>``).
"""
import linecache
import sys
import traceback

import hermes_tools

NAME = "<execute_code>"


def main() -> int:
    code = hermes_tools.fetch_code()
    linecache.cache[NAME] = (len(code), None, code.splitlines(True), NAME)
    sys.argv = [NAME]
    try:
        compiled = compile(code, NAME, "exec")
        exec(compiled, {"__name__": "__main__", "__file__": NAME})  # noqa: S102 - the tool's job
    except SystemExit as exc:
        code_ = exc.code
        return code_ if isinstance(code_, int) else (0 if code_ is None else 1)
    except BaseException as exc:  # noqa: BLE001 - shown to the model as the script's error
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != NAME:
            tb = tb.tb_next
        sys.stdout.flush()
        traceback.print_exception(type(exc), exc, tb, file=sys.stdout)
        return 1
    return 0


if __name__ == "__main__":
    sys.stdout.flush()
    sys.exit(main())

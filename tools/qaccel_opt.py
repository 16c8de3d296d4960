"""`qaccel-opt`: xdsl-opt for qaccel. Reads `.mlir` or `.tflite`, runs `-p` pipelines, prints
MLIR or writes `-t tflite`.

    qaccel-opt model.tflite                       # import and print the tfl IR
    qaccel-opt model.tflite | qaccel-opt          # print-parse round trip
    qaccel-opt in.mlir -t tflite -o out.tflite    # export

Every bad input (missing or malformed file, unknown pass or option, invalid IR) ends with one
line on stderr, `qaccel-opt: error: ...`, and exit code 1; never a Python traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import IO, NoReturn

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from qaccel.frontend.tflite_export import TFLiteExportError, TFLiteTarget, export_tflite
from qaccel.frontend.tflite_import import TFLiteImportError, import_tflite

PROG = "qaccel-opt"


class UsageError(Exception):
    """A command-line mistake, reported as one line."""


def fail(message: str, prog: str = PROG) -> NoReturn:
    first = message.strip().splitlines()[0] if message.strip() else "unknown error"
    print(f"{prog}: error: {first}", file=sys.stderr)
    sys.exit(1)


def parse_error_line(e: ParseError) -> str:
    """`file:line:col: message` for a parse error, instead of xDSL's multi-line excerpt."""
    try:
        loc = e.span.get_location()
        return f"{loc}: {e.msg}"
    except Exception:
        return e.msg


class QaccelOptMain(xDSLOptMain):
    def __init__(self, description: str = "qaccel modular optimizer driver", args=None):
        super().__init__(description=description, args=args)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser):
        def error(message: str) -> NoReturn:
            raise UsageError(message)

        arg_parser.error = error  # type: ignore[method-assign]
        super().register_all_arguments(arg_parser)

    def register_all_frontends(self):
        super().register_all_frontends()
        self.available_frontends["tflite"] = lambda io: import_tflite(
            io.read(), self.get_input_name()
        )

    def register_all_targets(self):
        super().register_all_targets()
        self.available_targets["tflite"] = lambda: TFLiteTarget

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        path = self.args.input_file
        if path is not None:
            try:
                open(path, "rb").close()
            except OSError as e:
                raise UsageError(f"cannot open input file '{path}': {e.strerror}") from None
        stream, ext = super().get_input_stream()
        if path is not None and ext not in self.available_frontends and not self.args.frontend:
            raise UsageError(
                f"'{path}': unknown file extension '.{ext}' (expected .mlir or .tflite; "
                "use -f to choose a frontend)"
            )
        return stream, ext

    def run(self):
        if self.args.target.split("{")[0] != "tflite":
            return super().run()
        chunks, ext = self.prepare_input()
        (chunk, offset), *rest = chunks
        if rest:
            raise UsageError("-t tflite cannot be combined with --split-input-file")
        module = self.parse_chunk(chunk, ext, offset)
        assert isinstance(module, ModuleOp)
        self.apply_passes(module)
        data = export_tflite(module)
        if self.args.output_file is None:
            if sys.stdout.isatty():
                raise UsageError("-t tflite writes binary data: give an output file with -o")
            sys.stdout.buffer.write(data)
        else:
            with open(self.args.output_file, "wb") as f:
                f.write(data)


def main(argv: Sequence[str] | None = None) -> None:
    try:
        try:
            opt = QaccelOptMain(args=argv)
        except ValueError as e:  # xDSL reports unknown passes and pass options this way
            raise UsageError(str(e)) from None
        opt.run()
    except UsageError as e:
        fail(str(e))
    except ArgSpecParseError as e:
        fail(f"invalid pass pipeline: {str(e).splitlines()[-1].strip()}")
    except ParseError as e:
        fail(parse_error_line(e))
    except (TFLiteImportError, TFLiteExportError, DiagnosticException) as e:
        fail(str(e))
    except BrokenPipeError:
        sys.exit(1)
    except OSError as e:
        fail(f"{e.filename}: {e.strerror}" if e.filename else str(e))


if __name__ == "__main__":
    main()

"""The `vta` dialect: the IR that is specific to the VTA-like accelerator's layers.

`form-vta-layers` groups the `accel` ops of a `vta` accelerator function into layers, one
`vta.layer` op each (a GEMM op with its requantization tail, an element-wise tree, a pool);
`schedule-vta` gives each layer the schedule its kind takes, a typed attribute saying how the
accelerator runs it (tiling and double buffering of a GEMM layer, chunk rows of an element-wise
or pool layer); `qaccel-compile` emits each layer's instruction stream from its schedule:

    %y = vta.layer "conv" schedule #vta.gemm_schedule<config = "vta-default", tile_h = 8,
           tile_w = 8, tile_co = 1, tile_ci = 1, loop_order = spatial, bias_mode = alu,
           inp_slots = 2, wgt_slots = 1, acc_slots = 2, estimated_cycles = 5216> {
      %acc = accel.conv2d_zp %x, %w ...
      ...
      vta.yield %n : tensor<1x1x8x8x1x16xi8>
    } : tensor<1x1x8x8x1x16xi8>

The layer's body says what it computes (the `accel` ops), its schedule only how: the
interpreter runs the body (`interpreter/vta_semantics.py`).

A schedule attribute is a `ScheduleAttr`: a table of typed fields (`FIELDS`, in print order)
read and written as `name = value` pairs, required fields checked at parse time, optional ones
absent from the text when absent from the attribute. A layer kind takes one schedule kind
(`LAYER_SCHEDULES`); adding a layer kind that is scheduled like an existing one is one entry
there (CONTRIBUTING.md, "Adding a layer kind").
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from xdsl.dialects.builtin import IntAttr, NoneAttr, StringAttr
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute, Region, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from qaccel.dialects.op_definition import irdl_op_definition  # formats built on first use
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

LOOP_ORDERS = ("spatial", "channel")
"""The order of a GEMM layer's two outer loops: output pixels outside, or output channels."""

BIAS_MODES = ("alu", "dma", "gemm", "store")
"""How a GEMM layer's bias reaches the accumulators (`lowering/vta/planning.py`)."""


# --------------------------------------------------------------------------------------------
# Schedules


@dataclass(frozen=True)
class Field:
    """One field of a schedule attribute: its name, how it is written (`int`, a `word` out of
    `words`, a `bool` written `true`/`false`, a quoted `string`), whether a schedule must
    have it, and the least value of an `int`."""

    name: str
    form: Literal["int", "word", "bool", "string"] = "int"
    required: bool = False
    minimum: int = 1
    words: tuple[str, ...] = ()


CONFIG = Field("config", "string")
"""The hardware configuration a schedule was made for (checked against the module's)."""

ESTIMATED_CYCLES = Field("estimated_cycles", minimum=0)
"""The timing model's cycles for the layer under the schedule (informative)."""


def _string_literal(text: str) -> str:
    """`text` as xDSL prints a string literal (every byte a parser reads back escaped, a
    newline in a configuration's name included)."""
    out = io.StringIO()
    Printer(stream=out).print_string_literal(text)
    return out.getvalue()


def _a(word: str) -> str:
    return f"an {word}" if word[0] in "aeiou" else f"a {word}"


class ScheduleAttr(ParametrizedAttribute):
    """Base of the schedule attributes: each parameter is a field of `FIELDS` (same names, same
    order), an `IntAttr` or `StringAttr` when present and `NoneAttr` when absent."""

    FIELDS: ClassVar[tuple[Field, ...]] = ()
    SCHEDULE_KIND: ClassVar[str] = ""
    """The word messages and `LAYER_SCHEDULES` use for the kind (`gemm`, `eltwise`, `pool`)."""

    def __init__(self, **fields: int | str | bool | None):
        names = {f.name for f in self.FIELDS}
        unknown = set(fields) - names
        if unknown:
            raise VerifyException(f"{self.name}: unknown fields {', '.join(sorted(unknown))}")
        params: list[Attribute] = []
        for f in self.FIELDS:
            v = fields.get(f.name)
            if v is None:
                params.append(NoneAttr())
            elif f.form in ("word", "string"):
                params.append(StringAttr(str(v)))
            else:
                params.append(IntAttr(int(v)))
        super().__init__(*params)

    def fields(self) -> dict[str, int | str | bool]:
        """The fields present, as Python values (`bool` fields as bools)."""
        out: dict[str, int | str | bool] = {}
        for f, v in zip(self.FIELDS, self.parameters):
            if isinstance(v, StringAttr):
                out[f.name] = v.data
            elif isinstance(v, IntAttr):
                out[f.name] = bool(v.data) if f.form == "bool" else v.data
        return out

    def get(self, key: str, default=None):
        return self.fields().get(key, default)

    def verify(self) -> None:
        present = self.fields()
        for f in self.FIELDS:
            value = present.get(f.name)
            if value is None:
                if f.required:
                    raise VerifyException(f"{self.name}: {_a(self.SCHEDULE_KIND)} schedule lacks "
                                          f"{f.name}")  # fmt: skip
            elif f.form == "word" and value not in f.words:
                raise VerifyException(f"{self.name}: {f.name} must be one of "
                                      f"{', '.join(f.words)}, not '{value}'")  # fmt: skip
            elif f.form == "int" and value < f.minimum:
                raise VerifyException(
                    f"{self.name}: {f.name} must be positive, got {value}" if f.minimum == 1
                    else f"{self.name}: {f.name} must not be negative"
                )

    def print_parameters(self, printer: Printer) -> None:
        items = []
        for f, v in zip(self.FIELDS, self.parameters):
            if isinstance(v, NoneAttr):
                continue
            if f.form == "string":
                text = _string_literal(v.data)
            elif f.form == "word":
                text = v.data
            elif f.form == "bool":
                text = "true" if v.data else "false"
            else:
                text = str(v.data)
            items.append(f"{f.name} = {text}")
        printer.print_string("<" + ", ".join(items) + ">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        by_name = {f.name: f for f in cls.FIELDS}
        values: dict[str, Attribute] = {}
        with parser.in_angle_brackets():
            while True:
                key = parser.parse_identifier()
                f = by_name.get(key)
                if f is None:
                    parser.raise_error(f"{cls.name}: unknown field '{key}' (fields: "
                                       f"{', '.join(by_name)})")  # fmt: skip
                if key in values:
                    parser.raise_error(f"{cls.name}: field '{key}' given twice")
                parser.parse_punctuation("=")
                if f.form == "string":
                    values[key] = StringAttr(parser.parse_str_literal())
                elif f.form == "word":
                    values[key] = StringAttr(parser.parse_identifier())
                else:
                    values[key] = IntAttr(parser.parse_integer(allow_boolean=True))
                if parser.parse_optional_punctuation(",") is None:
                    break
            for f in cls.FIELDS:
                if f.required and f.name not in values:
                    parser.raise_error(f"{cls.name}: {_a(cls.SCHEDULE_KIND)} schedule lacks "
                                       f"{f.name}")  # fmt: skip
        return [values.get(f.name, NoneAttr()) for f in cls.FIELDS]


@irdl_attr_definition
class GemmScheduleAttr(ScheduleAttr):
    """How a GEMM layer (`conv`, `depthwise`, `dense`) runs: the loop nest the emitter walks
    (written by `schedule-vta`, honoured by `qaccel-compile`, editable by hand):

        #vta.gemm_schedule<config = "vta-default", tile_h = 2, tile_w = 8, tile_co = 1,
                           tile_ci = 1, loop_order = spatial, bias_mode = gemm, inp_slots = 4,
                           wgt_slots = 1, acc_slots = 2, estimated_cycles = 5216>

    Output-row, output-column, output-channel and input-channel tile sizes (pixels; channel
    blocks), the order of the two outer loops, how the bias reaches the accumulators, and the
    slots of each on-chip buffer (double buffering; absent: the search's choice for this
    tiling). `config` names the hardware configuration it was made for; `estimated_cycles` is
    informative."""

    name = "vta.gemm_schedule"
    SCHEDULE_KIND = "gemm"
    FIELDS = (
        CONFIG,
        Field("tile_h", required=True), Field("tile_w", required=True),
        Field("tile_co", required=True), Field("tile_ci", required=True),
        Field("loop_order", "word", words=LOOP_ORDERS),
        Field("bias_mode", "word", words=BIAS_MODES),
        Field("inp_slots"), Field("wgt_slots"), Field("acc_slots"),
        ESTIMATED_CYCLES,
    )  # fmt: skip

    config: StringAttr | NoneAttr
    tile_h: IntAttr
    tile_w: IntAttr
    tile_co: IntAttr
    tile_ci: IntAttr
    loop_order: StringAttr | NoneAttr
    bias_mode: StringAttr | NoneAttr
    inp_slots: IntAttr | NoneAttr
    wgt_slots: IntAttr | NoneAttr
    acc_slots: IntAttr | NoneAttr
    estimated_cycles: IntAttr | NoneAttr


ALU_FIELDS = (
    CONFIG,
    Field("rows", required=True), Field("param_rows", minimum=0),
    Field("output_stage", "bool", minimum=0),
    ESTIMATED_CYCLES,
)  # fmt: skip
"""The fields of a layer the vector ALU runs (`eltwise`, `pool`)."""


@irdl_attr_definition
class EltwiseScheduleAttr(ScheduleAttr):
    """How an element-wise layer runs: what its emitter decides (`lowering/vta/emit_alu.py`):

        #vta.eltwise_schedule<config = "vta-default", rows = 64, param_rows = 1,
                              output_stage = false, estimated_cycles = 700>

    The rows of one channel block processed at a time, the parameter rows loaded first into
    the accumulator buffer, and whether the store module's output stage runs the
    requantizing tail."""

    name = "vta.eltwise_schedule"
    SCHEDULE_KIND = "eltwise"
    FIELDS = ALU_FIELDS

    config: StringAttr | NoneAttr
    rows: IntAttr
    param_rows: IntAttr | NoneAttr
    output_stage: IntAttr | NoneAttr
    estimated_cycles: IntAttr | NoneAttr


@irdl_attr_definition
class PoolScheduleAttr(ScheduleAttr):
    """How a pool layer runs: as `#vta.eltwise_schedule`, `rows` the output rows of a pool
    tile:

        #vta.pool_schedule<config = "vta-default", rows = 4, param_rows = 0,
                           output_stage = false, estimated_cycles = 1200>"""

    name = "vta.pool_schedule"
    SCHEDULE_KIND = "pool"
    FIELDS = ALU_FIELDS

    config: StringAttr | NoneAttr
    rows: IntAttr
    param_rows: IntAttr | NoneAttr
    output_stage: IntAttr | NoneAttr
    estimated_cycles: IntAttr | NoneAttr


SCHEDULES: Mapping[str, type[ScheduleAttr]] = {
    "gemm": GemmScheduleAttr, "eltwise": EltwiseScheduleAttr, "pool": PoolScheduleAttr,
}  # fmt: skip
"""Each schedule kind's attribute."""

LAYER_SCHEDULES: Mapping[str, type[ScheduleAttr]] = {
    "conv": GemmScheduleAttr,
    "depthwise": GemmScheduleAttr,
    "dense": GemmScheduleAttr,
    "eltwise": EltwiseScheduleAttr,
    "pool": PoolScheduleAttr,
}
"""What a `vta.layer` of each kind computes is its body's business; how it is scheduled is the
attribute here: a GEMM layer (convolution, depthwise convolution or matrix product with its
requantization tail), an element-wise tree, or a windowed pool."""

LAYER_KINDS = tuple(LAYER_SCHEDULES)
GEMM_KINDS = tuple(k for k, s in LAYER_SCHEDULES.items() if s is GemmScheduleAttr)


def schedule_attr(kind: str, **fields: int | str | bool | None) -> ScheduleAttr:
    """The schedule attribute of schedule kind `kind` (`gemm`, `eltwise`, `pool`)."""
    return SCHEDULES[kind](**fields)


# --------------------------------------------------------------------------------------------
# Layers


class VtaOp(IRDLOperation):
    """Base of the `vta` ops."""


@irdl_op_definition
class YieldOp(VtaOp):
    """Ends a `vta.layer`'s body: the values the layer produces."""

    name = "vta.yield"
    values = var_operand_def()
    traits = traits_def(IsTerminator(), Pure())
    assembly_format = "$values attr-dict `:` type($values)"

    def __init__(self, values: Sequence[SSAValue | Operation]):
        super().__init__(operands=[[SSAValue.get(v) for v in values]])

    def verify_(self) -> None:
        if not isinstance(self.parent_op(), LayerOp):
            raise VerifyException(f"{self.name}: only a vta.layer's body ends with it")


@irdl_op_definition
class LayerOp(VtaOp):
    """One accelerator layer: the ops it computes, in its body (`form-vta-layers`).

        %y, %w = vta.layer "conv" {
          %acc = accel.conv2d_zp %x, %wt ...
          ...
          %y = accel.narrow %q : ... -> tensor<...xi8>
          vta.yield %y, %q : tensor<...xi8>, tensor<...xi32>
        } : tensor<...xi8>, tensor<...xi32>

    `kind` is one of `LAYER_KINDS`. The first result is what the layer stores in DRAM (the
    GEMM layer's int8 output, or its int32 requantized value when an element-wise op reads
    it); a second one, when present, is the int32 value the layer narrows, also used outside
    (equal to the widened first result). The body reads values defined above it (the layer's
    inputs and constant weights) and computes exactly what its ops compute; `schedule` (the
    kind's schedule attribute, `LAYER_SCHEDULES`, from `schedule-vta`) says how the
    accelerator runs it."""

    name = "vta.layer"

    kind = prop_def(StringAttr)
    schedule = opt_prop_def(AnyAttr())  # the kind's schedule attribute (checked by `verify_`)
    outputs = var_result_def()
    body = region_def("single_block")

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$kind (`schedule` $schedule^)? attr-dict-with-keyword $body `:` type($outputs)"

    def __init__(self, kind: str, result_types: Sequence[Attribute], body: Region):
        super().__init__(properties={"kind": StringAttr(kind)}, result_types=[result_types],
                         regions=[body])  # fmt: skip

    @property
    def kind_name(self) -> str:
        return self.kind.data

    def body_ops(self) -> list[Operation]:
        """The layer's ops, in order, without the `vta.yield`."""
        return list(self.body.block.ops)[:-1]

    def verify_(self) -> None:
        want = LAYER_SCHEDULES.get(self.kind.data)
        if want is None:
            raise VerifyException(f"{self.name}: kind '{self.kind.data}' is not one of "
                                  f"{', '.join(LAYER_KINDS)}")  # fmt: skip
        last = self.body.block.last_op
        if not isinstance(last, YieldOp):
            raise VerifyException(f"{self.name}: the body must end with vta.yield")
        if [v.type for v in last.values] != [r.type for r in self.outputs]:
            raise VerifyException(f"{self.name}: vta.yield's types differ from the results'")
        if not self.outputs:
            raise VerifyException(f"{self.name}: a layer produces at least one value")
        if self.schedule is not None and not isinstance(self.schedule, want):
            got = self.schedule.name if isinstance(self.schedule, ScheduleAttr) else "attribute"
            raise VerifyException(f"{self.name}: kind {self.kind.data} takes a #{want.name}, not "
                                  f"a #{got}")  # fmt: skip


VTA_OPS = (LayerOp, YieldOp)

VTA_ATTRIBUTES = (GemmScheduleAttr, EltwiseScheduleAttr, PoolScheduleAttr)

Vta = Dialect("vta", [*VTA_OPS], [*VTA_ATTRIBUTES])

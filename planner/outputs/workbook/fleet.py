"""The ``Fleet`` sheet: the shared fleet's counts as inputs, and what they serve and cost as live
formulas.

The counts are the integer program's (:func:`planner.plan.fleet.solve`): replicas of each option
on owned and on rented devices hour by hour, each workload's share sent to the API, the devices,
nodes and spare nodes owned of each type. Finance may change any of them; the formulas then say
whether each workload's load is still served every hour, whether the owned devices and nodes
still hold the replicas, and what the fleet costs, and the status cell says the counts are no
longer the optimiser's (the sheet checks a fleet, it does not choose one). Every formula is a
fleet metric (:mod:`planner.model.fleet`) over the cells its arguments name, and the cached
values are the same metrics evaluated over the same counts. Options, workloads and device types
are tied by their numbers, never by their names: catalog text stays text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from openpyxl import Workbook
from openpyxl.utils import get_column_letter

from planner.model import fleet as fleet_model
from planner.model.expr import to_excel
from planner.model.finance import HOURS
from planner.outputs.workbook.cells import (
    INPUT_FILL,
    TITLE_FONT,
    _cell,
    _formula_cell,
    _header,
    _new_sheet,
    _print_setup,
    _text_cell,
    _widths,
)
from planner.plan.fleet import PREFILL_POOL, Fleet, pool_pairs

#: The first hour's column (hours 0 to 23 run from it), and the column after the last hour.
FIRST_HOUR = 6
AFTER_HOURS = FIRST_HOUR + HOURS


def _col(number: int) -> str:
    return get_column_letter(number)


def _hours(row: int) -> str:
    """The row's 24 hour cells, absolute."""
    return f"${_col(FIRST_HOUR)}${row}:${_col(AFTER_HOURS - 1)}${row}"


def _block(first: int, count: int, column: int) -> str:
    """A column's cells over a block's rows, absolute."""
    return f"${_col(column)}${first}:${_col(column)}${first + count - 1}"


def _grid(first: int, count: int) -> str:
    """A block's hour cells, absolute."""
    return f"${_col(FIRST_HOUR)}${first}:${_col(AFTER_HOURS - 1)}${first + count - 1}"


@dataclass
class _Sheet:
    """The sheet's rows as they are built: each cell a constant, an input, or a formula with
    its cached value."""

    ws: Any
    rows: list[list[Any]] = field(default_factory=list)
    cache: dict[str, Any] = field(default_factory=dict)

    @property
    def next(self) -> int:
        return len(self.rows) + 1

    def add(self, cells: list[Any] | None = None) -> int:
        self.rows.append(cells or [])
        return len(self.rows)

    def formula(self, row: int, column: int, name: str, refs: dict[str, str],
                values: dict[str, Any], fmt: str = "0") -> Any:  # fmt: skip
        """Fleet metric ``name``'s formula at (``row``, ``column``) over the cells ``refs``,
        its cached value the metric over ``values``."""
        metric = fleet_model.fleet_metrics()[name]
        text = to_excel(metric.expression(), lambda n: refs[n])
        self.cache[f"{_col(column)}{row}"] = fleet_model.value(name, values)
        return _formula_cell(self.ws, text, None if metric.kind != "number" else fmt)

    def title(self, text: str, note: str = "") -> None:
        self.add([_text_cell(self.ws, text, font=TITLE_FONT)])
        if note:
            self.add([_text_cell(self.ws, note)])

    def header(self, names: list[str], hours: bool = True, last: str = "") -> None:
        cells = _header(self.ws, names + [""] * (FIRST_HOUR - 1 - len(names)))
        if hours:
            cells += _header(self.ws, [f"{t} h" for t in range(HOURS)])
        if last:
            cells += _header(self.ws, [last])
        self.add(cells)


@dataclass
class _Layout:
    """Where each block starts and the values in it."""

    fleet: Fleet
    workloads: list[str]  # the demands' keys: a workload, or each length class of one
    names: list[str]
    owned: list[tuple[int, ...]]
    rented: list[tuple[int, ...]]
    alone: list[tuple[int, ...]]
    rows: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, fleet: Fleet) -> _Layout:
        zero = (0,) * HOURS
        rented = [fleet.rented_replicas.get(o, zero) for o in fleet.options]
        total = [fleet.replicas.get(o, zero) for o in fleet.options]
        owned = [tuple(a - b for a, b in zip(t, r, strict=True)) for t, r in zip(total, rented,
                 strict=True)]  # fmt: skip
        alone = [tuple(o.alone_at(t) for t in range(HOURS)) for o in fleet.options]
        return cls(fleet, list(fleet.demands), list(fleet.types), owned, rented, alone)

    @cached_property
    def parents(self) -> list[str]:
        return list(dict.fromkeys(d.of for d in self.fleet.demands.values()))

    def part_number(self, parent: str, key: str) -> int:
        """0 for a workload's whole mix, else its length class's number within it."""
        parts = [d.workload for d in self.fleet.demands.values() if d.parent == parent]
        return parts.index(key) + 1 if key in parts else 0

    def key_ids(self, k: int) -> tuple[int, int]:
        """Demand ``k``'s workload number and part number."""
        day = self.fleet.demands[self.workloads[k]]
        return self.parents.index(day.of) + 1, self.part_number(day.of, day.workload)

    def option_ids(self, i: int) -> list[Any]:
        """Option ``i``'s workload number, type number, devices a replica and part number."""
        o = self.fleet.options[i]
        part = self.part_number(o.workload, o.part) if o.part else 0
        part = PREFILL_PART if o.pool == PREFILL_POOL else part  # carries no load of its own
        return [self.parents.index(o.workload) + 1, self.names.index(o.hardware) + 1,
                o.devices, part]  # fmt: skip


#: The part number of a prefill pool's option, which no demand has: the pool carries no load
#: of its own (its decode pool's option does), so it counts in no workload's load served.
PREFILL_PART = -1


def write_fleet(wb: Workbook, fleet: Fleet | str | None) -> dict[str, Any]:
    """Add the sheet (nothing without a fleet); returns its formula cells' cached values."""
    if fleet is None or isinstance(fleet, str) or not fleet.options:
        return {}
    ws = _new_sheet(wb, "Fleet", "2E75B6")
    _widths(ws, [46, 10, 12, 12, 12] + [6] * HOURS + [14])
    sheet, layout = _Sheet(ws), _Layout.of(fleet)
    sheet.title(
        "Fleet: one shared fleet for the ask's workloads",
        "Counts in blue are inputs: the optimiser's, which finance may change; every other "
        "figure is a formula over them. The sheet checks and prices a fleet; it does not "
        "choose one.",
    )
    status = sheet.add()
    cost_row = sheet.add()
    sheet.add()
    _options(sheet, layout)
    _workloads(sheet, layout)
    _paces(sheet, layout)
    _types(sheet, layout)
    _packing(sheet, layout)
    _chosen(sheet, layout)
    _totals(sheet, layout, status, cost_row)
    for cells in sheet.rows:
        ws.append(cells)
    _print_setup(ws, f"A1:{_col(AFTER_HOURS)}{len(sheet.rows)}")
    return sheet.cache


def _option_rows(sheet: _Sheet, layout: _Layout, key: str, title: str, values: list[Any],
                 fill: Any = None, fmt: str = "0") -> None:  # fmt: skip
    """A block of a row per option: its label and numbers, then its 24 hours of ``values``."""
    sheet.title(title)
    sheet.header(["option", "workload #", "type #", "devices a replica", "part #"])
    layout.rows[key] = sheet.next
    for i, o in enumerate(layout.fleet.options):
        cells = [_text_cell(sheet.ws, f"{o.workload}: {o.label}")]
        cells += [_cell(sheet.ws, v) for v in layout.option_ids(i)]
        style = {"fill": fill} if fill is not None else {}
        cells += [_cell(sheet.ws, v, fmt, **style) for v in values[i]]
        sheet.add(cells)
    sheet.add()


def _options(sheet: _Sheet, layout: _Layout) -> None:
    _option_rows(sheet, layout, "o_alone", "Replicas that carry the hour's whole load alone",
                 layout.alone)  # fmt: skip
    _option_rows(sheet, layout, "o_owned", "Replicas on owned devices (input)", layout.owned,
                 INPUT_FILL)  # fmt: skip
    _option_rows(sheet, layout, "o_rented", "Replicas on rented devices (input)", layout.rented,
                 INPUT_FILL)  # fmt: skip
    sheet.title("Share of the workload's load each option carries")
    sheet.header(["option", "workload #", "type #", "devices a replica", "part #"])
    layout.rows["o_share"] = first = sheet.next
    for i, o in enumerate(layout.fleet.options):
        r = first + i
        cells = [_text_cell(sheet.ws, f"{o.workload}: {o.label}")]
        cells += [_cell(sheet.ws, v) for v in layout.option_ids(i)]
        for t in range(HOURS):
            c = _col(FIRST_HOUR + t)
            refs = {"replicas_owned": f"{c}{layout.rows['o_owned'] + i}",
                    "replicas_rented": f"{c}{layout.rows['o_rented'] + i}",
                    "replicas_alone": f"{c}{layout.rows['o_alone'] + i}"}  # fmt: skip
            values = {"replicas_owned": layout.owned[i][t], "replicas_rented": layout.rented[i][t],
                      "replicas_alone": layout.alone[i][t]}  # fmt: skip
            cells.append(sheet.formula(r, FIRST_HOUR + t, "option_share", refs, values, "0.00"))
        sheet.add(cells)
    sheet.add()


def _paces(sheet: _Sheet, layout: _Layout) -> None:
    """A row per two-pool option's prefill pool: each hour, the share of the load its decode
    pool carries beyond what it keeps pace with (nothing where there is no such option)."""
    options = layout.fleet.options
    pairs = pool_pairs(options)
    if not pairs:
        return
    sheet.title("Prefill pools keeping pace with their decode pools")
    sheet.header(["prefill pool", "decode pool's row"], last="paced")
    shares = _cached_grid(sheet, layout.rows["o_share"], len(options))
    for p, d in pairs:
        r, o = sheet.next, options[p]
        partner = _cell(sheet.ws, layout.rows["o_share"] + d)
        cells = [_text_cell(sheet.ws, f"{o.workload}: {o.label}"), partner]
        cells += [None] * (FIRST_HOUR - 3)

        def pace(t: int, p: int = p, d: int = d) -> tuple[dict[str, str], dict[str, Any]]:
            c = _col(FIRST_HOUR + t)
            refs = {"prefill_share": f"{c}{layout.rows['o_share'] + p}",
                    "decode_share": f"{c}{layout.rows['o_share'] + d}"}  # fmt: skip
            return refs, {"prefill_share": shares[p][t], "decode_share": shares[d][t]}

        _shortfalls(sheet, r, cells, "pace_short", pace, "pools_paced")
        sheet.add(cells)
    sheet.add()


def _shortfalls(
    sheet: _Sheet,
    row: int,
    cells: list[Any],
    name: str,
    hour: Callable[[int], tuple[dict[str, str], dict[str, Any]]],
    check: str,
) -> None:
    """Append to ``cells`` the row's 24 hours of shortfall metric ``name`` (``hour(t)``: the
    cells it reads in hour ``t`` and their values), then ``check`` over them (its input
    ``name`` + ``_all``)."""
    short = []
    for t in range(HOURS):
        refs, values = hour(t)
        cells.append(sheet.formula(row, FIRST_HOUR + t, name, refs, values, "0.00"))
        short.append(fleet_model.value(name, values))
    every = f"{name}_all"
    cells.append(sheet.formula(row, AFTER_HOURS, check, {every: _hours(row)}, {every: short}))


def _cached_grid(sheet: _Sheet, first: int, count: int) -> list[list[Any]]:
    """The cached values of a block's hour cells, as its formulas computed them."""
    return [[sheet.cache[f"{_col(FIRST_HOUR + t)}{first + i}"] for t in range(HOURS)]
            for i in range(count)]  # fmt: skip


def _workloads(sheet: _Sheet, layout: _Layout) -> None:
    fleet, ws = layout.fleet, sheet.ws
    sheet.title("Workloads: traffic, the API's share and the load served")
    sheet.header(["workload", "workload #", "API bill (USD)", "part #"], last="API cost (USD)")
    layout.rows["w_profile"] = sheet.next
    layout.rows["w_api"] = layout.rows["w_profile"] + len(layout.workloads) + 2
    for k, w in enumerate(layout.workloads):
        day = fleet.demands[w]
        bill = day.api_usd if day.api_usd != float("inf") else "no API offer"
        number, part = layout.key_ids(k)
        cells = [_text_cell(ws, f"{w}: each hour's traffic ÷ the busiest hour's"),
                 _cell(ws, number), _cell(ws, bill, "#,##0"), _cell(ws, part), None]  # fmt: skip
        cells += [_cell(ws, p, "0.00") for p in day.profile]
        refs = {"api_share_all": _hours(layout.rows["w_api"] + k),
                "daily_profile": _hours(sheet.next),
                "api_bill_usd": f"$C${sheet.next}"}  # fmt: skip
        values = {"api_share_all": fleet.api_by_hour.get(w, (0.0,) * HOURS),
                  "daily_profile": day.profile,
                  "api_bill_usd": day.api_usd}  # fmt: skip
        cells.append(sheet.formula(sheet.next, AFTER_HOURS, "api_cost_usd", refs, values,
                                   "#,##0"))  # fmt: skip
        sheet.add(cells)
    sheet.add()
    sheet.header(["share sent to the hosted API (input)", "workload #", "", "part #"])
    for k, w in enumerate(layout.workloads):
        sent = fleet.api_by_hour.get(w, (0.0,) * HOURS)
        cells = _key_cells(ws, layout, k)
        cells += [_cell(ws, s, "0.000", fill=INPUT_FILL) for s in sent]
        sheet.add(cells)
    sheet.add()
    sheet.header(["share of the load served", "workload #", "", "part #"])
    layout.rows["w_served"] = sheet.next
    shares = _cached_grid(sheet, layout.rows["o_share"], len(fleet.options))
    served: list[list[float]] = []
    for k, w in enumerate(layout.workloads):
        r = sheet.next
        cells = _key_cells(ws, layout, k)
        api = fleet.api_by_hour.get(w, (0.0,) * HOURS)
        served.append([])
        for t in range(HOURS):
            refs, values = _option_columns(layout, "o_share", t, {"option_share_column": shares})
            refs |= {"workload_number": f"$B{r}", "part_number": f"$D{r}",
                     "api_share": f"{_col(FIRST_HOUR + t)}{layout.rows['w_api'] + k}"}  # fmt: skip
            values |= _key_values(layout, k) | {"api_share": api[t]}
            cells.append(sheet.formula(r, FIRST_HOUR + t, "load_served", refs, values, "0.00"))
            served[k].append(fleet_model.value("load_served", values))
        sheet.add(cells)
    sheet.add()
    sheet.header(["share of the load nothing serves", "workload #", "", "part #"],
                 last="all served")  # fmt: skip
    for k in range(len(layout.workloads)):
        r = sheet.next
        cells = _key_cells(ws, layout, k)

        def short(t: int, r: int = r, k: int = k) -> tuple[dict[str, str], dict[str, Any]]:
            alone = {"replicas_alone_column": layout.alone}
            refs, values = _option_columns(layout, "o_alone", t, alone)
            refs |= {"load_served": f"{_col(FIRST_HOUR + t)}{layout.rows['w_served'] + k}",
                     "workload_number": f"$B{r}", "part_number": f"$D{r}"}  # fmt: skip
            return refs, values | _key_values(layout, k) | {"load_served": served[k][t]}

        _shortfalls(sheet, r, cells, "load_short", short, "load_met")
        sheet.add(cells)
    sheet.add()


def _key_cells(ws: Any, layout: _Layout, k: int) -> list[Any]:
    """A demand row's first cells: its key, workload number and part number."""
    number, part = layout.key_ids(k)
    return [_text_cell(ws, layout.workloads[k]), _cell(ws, number), None, _cell(ws, part), None]


def _key_values(layout: _Layout, k: int) -> dict[str, int]:
    number, part = layout.key_ids(k)
    return {"workload_number": number, "part_number": part}


def _block_col(first: int, count: int, letter: str) -> str:
    return f"{letter}${first}:{letter}${first + count - 1}"


def _option_columns(
    layout: _Layout, key: str, hour: int, counts: dict[str, list[Any]] | None = None
) -> tuple[dict[str, str], dict[str, Any]]:
    """The options' columns of block ``key`` (their workload and type numbers, their devices a
    replica) and, for each name of ``counts``, its values in ``hour``'s column: the cells a
    formula reads, and their values."""
    options, first = layout.fleet.options, layout.rows[key]
    n = len(options)
    refs = {"workload_number_column": _block(first, n, 2),
            "type_number_column": _block(first, n, 3),
            "devices_per_replica_column": _block(first, n, 4),
            "part_number_column": _block(first, n, 5)}  # fmt: skip
    ids = [layout.option_ids(i) for i in range(n)]
    values: dict[str, Any] = {
        "workload_number_column": [i[0] for i in ids],
        "type_number_column": [i[1] for i in ids],
        "devices_per_replica_column": [o.devices for o in options],
        "part_number_column": [i[3] for i in ids],
    }
    for name, grid in (counts or {}).items():
        refs[name] = _block_col(first, n, _col(FIRST_HOUR + hour))
        values[name] = [grid[i][hour] for i in range(n)]
    return refs, values


def _type_hours(sheet: _Sheet, layout: _Layout, key: str, rented: bool) -> None:
    """A row per device type: its devices on owned (or rented) replicas, hour by hour."""
    ws = sheet.ws
    source = "o_rented" if rented else "o_owned"
    sheet.title("Devices rented, hour by hour" if rented
                else "Owned devices the owned replicas use, hour by hour")  # fmt: skip
    sheet.header(["device type", "type #"])
    layout.rows[key] = sheet.next
    counts = layout.rented if rented else layout.owned
    for j, h in enumerate(layout.names):
        r = sheet.next
        cells = [_text_cell(ws, h), _cell(ws, j + 1), None, None, None]
        for t in range(HOURS):
            refs, values = _option_columns(layout, source, t, {"replicas_column": counts})
            refs["type_number"], values["type_number"] = f"$B{r}", j + 1
            cells.append(sheet.formula(r, FIRST_HOUR + t, "devices_in_use", refs, values))
        sheet.add(cells)
    sheet.add()


#: The device types' columns after their number: header, the Fleet value, whether an input.
TYPE_COLUMNS = [
    ("devices a node", "devices_per_node", False),
    ("device owned (USD)", "device_owned_usd", False),
    ("node owned (USD)", "node_owned_usd", False),
    ("device rented (USD)", "device_rented_usd", False),
    ("owned devices", "owned_devices", True),
    ("owned nodes", "owned_nodes", True),
    ("spare nodes", "spare_nodes", True),
]


def _type_values(layout: _Layout, j: int) -> dict[str, Any]:
    h = layout.names[j]
    t, fleet = layout.fleet.types[h], layout.fleet
    return {
        "devices_per_node": t.devices,
        "device_owned_usd": t.device_usd,
        "node_owned_usd": t.node_usd,
        "device_rented_usd": t.rent_usd,
        "owned_devices": fleet.owned_devices.get(h, 0),
        "owned_nodes": fleet.owned_nodes.get(h, 0),
        "spare_nodes": fleet.spare.get(h, 0),
    }


def _types(sheet: _Sheet, layout: _Layout) -> None:
    _type_hours(sheet, layout, "t_used", rented=False)
    _type_hours(sheet, layout, "t_rented", rented=True)
    used = _cached_grid(sheet, layout.rows["t_used"], len(layout.names))
    rented = _cached_grid(sheet, layout.rows["t_rented"], len(layout.names))
    ws = sheet.ws
    sheet.title("Device types: what is owned, what is rented, whether it holds, what it costs")
    names = ["device type", "type #"] + [header for header, _, _ in TYPE_COLUMNS]
    names += ["rented device-h a day", "cost (USD)", "devices hold", "nodes hold"]
    sheet.add(_header(ws, names))
    layout.rows["types"] = sheet.next
    for j, h in enumerate(layout.names):
        r, values = sheet.next, _type_values(layout, j)
        cells = [_text_cell(ws, h), _cell(ws, j + 1)]
        for _, name, editable in TYPE_COLUMNS:
            number = values[name]
            shown = number if number != float("inf") else "not offered"
            style = {"fill": INPUT_FILL} if editable else {}
            cells.append(_cell(ws, shown, "#,##0" if "usd" in name else "0", **style))
        at = {name: f"${_col(3 + k)}{r}" for k, (_, name, _) in enumerate(TYPE_COLUMNS)}
        hours_rented = {"devices_rented_all": _hours(layout.rows["t_rented"] + j)}
        cells.append(sheet.formula(r, 10, "rented_device_hours_per_day", hours_rented,
                                   {"devices_rented_all": rented[j]}))  # fmt: skip
        values["rented_device_hours_per_day"] = sum(rented[j])
        refs = at | {"rented_device_hours_per_day": f"$J{r}"}
        cells.append(sheet.formula(r, 11, "type_cost_usd", refs, values, "#,##0"))
        held = refs | {"devices_owned_used_all": _hours(layout.rows["t_used"] + j)}
        values["devices_owned_used_all"] = used[j]
        cells.append(sheet.formula(r, 12, "devices_hold", held, values))
        cells.append(sheet.formula(r, 13, "nodes_hold", refs, values))
        sheet.add(cells)
    sheet.add()


def _packing(sheet: _Sheet, layout: _Layout) -> None:
    """A row per device type and replica size on it: the owned devices its replicas of that
    size or more hold each hour, against the room the owned nodes give them."""
    ws = sheet.ws
    sheet.title("Replicas packed whole onto the owned nodes")
    sheet.header(["device type: replicas of this size or more", "type #", "size (devices)",
                  "room (devices)"], last="fits")  # fmt: skip
    for j, h in enumerate(layout.names):
        values = _type_values(layout, j)
        sizes = sorted({o.devices for o in layout.fleet.options if o.hardware == h})
        summary = layout.rows["types"] + j
        for size in sizes:
            r = sheet.next
            cells = [_text_cell(ws, h), _cell(ws, j + 1), _cell(ws, size)]
            refs = {"owned_nodes": f"$H${summary}", "spare_nodes": f"$I${summary}",
                    "devices_per_node": f"$C${summary}", "replica_size": f"$C{r}"}  # fmt: skip
            room = values | {"replica_size": size}
            cells += [sheet.formula(r, 4, "packing_room", refs, room), None]
            packed = []
            for t in range(HOURS):
                owned = {"replicas_owned_column": layout.owned}
                at, numbers = _option_columns(layout, "o_owned", t, owned)
                at |= {"type_number": f"$B{r}", "replica_size": f"$C{r}"}
                numbers |= {"type_number": j + 1, "replica_size": size}
                cells.append(sheet.formula(r, FIRST_HOUR + t, "devices_packed", at, numbers))
                packed.append(fleet_model.value("devices_packed", numbers))
            holds = {"devices_packed_all": _hours(r), "packing_room": f"$D{r}"}
            fits = {"devices_packed_all": packed,
                    "packing_room": fleet_model.value("packing_room", room)}  # fmt: skip
            cells.append(sheet.formula(r, AFTER_HOURS, "packing_holds", holds, fits))
            sheet.add(cells)
    sheet.add()


def _chosen(sheet: _Sheet, layout: _Layout) -> None:
    """A copy of the optimiser's counts, which the status cell compares the inputs with."""
    ws = sheet.ws
    sheet.title("The optimiser's counts: a copy the status above compares the inputs with "
                "(do not edit)")  # fmt: skip
    for key, counts in (("c_owned", layout.owned), ("c_rented", layout.rented)):
        layout.rows[key] = sheet.next
        for i, o in enumerate(layout.fleet.options):
            kind = "owned" if key == "c_owned" else "rented"
            cells = [_text_cell(ws, f"{kind}: {o.workload}: {o.label}"), None, None, None, None]
            sheet.add(cells + [_cell(ws, v) for v in counts[i]])
    layout.rows["c_api"] = sheet.next
    for w in layout.workloads:
        shares = layout.fleet.api_by_hour.get(w, (0.0,) * HOURS)
        sheet.add([_text_cell(ws, f"API: {w}"), None, None, None, None]
                  + [_cell(ws, s, "0.000") for s in shares])  # fmt: skip
    layout.rows["c_types"] = sheet.next
    for j, h in enumerate(layout.names):
        values = _type_values(layout, j)
        counts = [values[name] for _, name, editable in TYPE_COLUMNS if editable]
        sheet.add([_text_cell(ws, f"owned: {h}")] + [None] * 5 + [_cell(ws, v) for v in counts])


def _totals(sheet: _Sheet, layout: _Layout, status: int, cost_row: int) -> None:
    """The status and the cost rows at the top."""
    ws, fleet = sheet.ws, layout.fleet
    n_opt, n_wl, n_type = len(fleet.options), len(layout.workloads), len(layout.names)
    api_usd = [sheet.cache[f"{_col(AFTER_HOURS)}{layout.rows['w_profile'] + k}"]
               for k in range(n_wl)]  # fmt: skip
    type_usd = [sheet.cache[f"K{layout.rows['types'] + j}"] for j in range(n_type)]
    refs = {"type_cost_usd_all": _block(layout.rows["types"], n_type, 11),
            "api_cost_usd_all": _block(layout.rows["w_profile"], n_wl, AFTER_HOURS)}  # fmt: skip
    values = {"type_cost_usd_all": type_usd, "api_cost_usd_all": api_usd}
    sheet.rows[cost_row - 1] = [
        _text_cell(ws, "cost over the period (USD)"),
        sheet.formula(cost_row, 2, "fleet_cost_usd", refs, values, "#,##0"),
        _text_cell(ws, "the optimiser's:"),
        _cell(ws, fleet.cost_usd, "#,##0"),
    ]
    types = layout.rows["types"]
    counts = f"$G${types}:$I${types + n_type - 1}"
    chosen = f"$G${layout.rows['c_types']}:$I${layout.rows['c_types'] + n_type - 1}"
    refs = {"replicas_owned_all": _grid(layout.rows["o_owned"], n_opt),
            "chosen_replicas_owned": _grid(layout.rows["c_owned"], n_opt),
            "replicas_rented_all": _grid(layout.rows["o_rented"], n_opt),
            "chosen_replicas_rented": _grid(layout.rows["c_rented"], n_opt),
            "api_share_all": _grid(layout.rows["w_api"], n_wl),
            "chosen_api_share": _grid(layout.rows["c_api"], n_wl),
            "owned_counts_all": counts, "chosen_owned_counts": chosen}  # fmt: skip
    zero = {name: 0.0 for name in refs}
    sheet.rows[status - 1] = [
        _text_cell(ws, "status"),
        sheet.formula(status, 2, "plan_status", refs, zero),
    ]

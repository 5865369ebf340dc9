"""The experiment report and the ``trainperf`` command, on run documents captured on the H100."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from trainperf.cli.main import main
from trainperf.judge import stats
from trainperf.measure.measurement import Measurement
from trainperf.record import document
from trainperf.record.document import RunDocumentError, load
from trainperf.record.result import CaseResult
from trainperf.report import charts, headline, lines
from trainperf.report.experiment import build_report
from trainperf.report.pages import write_html, write_markdown
from trainperf.report.roofline_plot import without_flops
from trainperf.report.tables import mfu_text

DATA = Path(__file__).parent / "data"
RUNS = [DATA / "h100_digits_ncu.run.json", DATA / "h100_gpt2_ncu.run.json"]  # --profile=ncu, H100
H200_GPT2 = DATA / "h200_gpt2.run.json"  # perf_tests/test_gpt2.py --perf-strict on an H200, every case
H200_STACK_FP8 = DATA / "h200_gpt2_stack_fp8_ncu.run.json"  # -k stack_fp8 --profile=ncu on an H200
H100_FP8_ONE_CHILD = DATA / "h100_gpt2_fp8_one_child.run.json"  # stack_fp8, fp8_tensorwise: one ncu child, H100
PNG = b"\x89PNG\r\n\x1a\n"
TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "table", "thead", "tbody", "tr",
        "th", "td", "div", "img", "ul", "ol", "li", "details", "summary", "code", "span"}  # fmt: skip


class Page(HTMLParser):
    """Tags, images and text of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.images: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag == "img":
            self.images.append(dict(attrs)["src"] or "")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report")
    assert main(["report", *map(str, RUNS), "-o", str(out)]) == 0
    return out


def parsed(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def test_html_holds_every_case_and_the_two_profiles_per_workload(rendered: Path) -> None:
    page = parsed(rendered / "report.html")
    text = " ".join(page.text)
    for run in RUNS:
        for case in json.loads(run.read_text())["benchmarks"]:
            assert case["name"] in text
    assert "digits/reference: reference" in text and "digits/channels_last: best (9.39x the reference)" in text
    assert "gpt2/reference: reference" in text and "gpt2/amp_bf16: best (2.31x the reference)" in text
    assert "I/O-bound: the host waited for data 91% of the iteration: more loader workers" in text
    assert "FP32 FFMA path at 74% of the FP32 roof: enable TF32 or bf16 tensor cores" in text
    assert "NVIDIA H100 80GB HBM3" in text and "580.159.04" in text  # the device
    assert "throttle" in text and "1980" in text  # the clocks seen


def test_html_embeds_every_chart_and_escapes_kernel_names(rendered: Path) -> None:
    source = (rendered / "report.html").read_text(encoding="utf-8")
    page = parsed(rendered / "report.html")
    assert page.tags <= TAGS  # no markup came from a kernel name
    assert len(page.images) == 10  # per workload: ladder, two rooflines, timing chart, cases on the roofline
    for src in page.images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == PNG
    assert "void cutlass::Kernel2&lt;cutlass_80_simt_sgemm_256x128_8x4_nn_align1&gt;" in source
    assert "<cutlass_80" not in source and "void cutlass::Kernel2<" in " ".join(page.text)


def test_markdown_has_the_tables_and_its_charts_beside_it(rendered: Path) -> None:
    markdown = (rendered / "report.md").read_text(encoding="utf-8")
    assert "| gpt2/amp_bf16 " in markdown and "| digits/channels_last " in markdown
    charts = re.findall(r"!\[[^]]*\]\((report-images/[^)]+)\)", markdown)
    assert len(charts) == 10
    for chart in charts:
        assert (rendered / chart).read_bytes()[:8] == PNG


def test_headline_comes_first_and_device_and_clocks_fold_at_the_end(tmp_path: Path) -> None:
    """A failed case leads the page with its message; the best step of each workload follows; the
    device and clock tables come last, folded."""
    failing = json.loads(RUNS[1].read_text())
    amp = next(case for case in failing["benchmarks"] if case["name"] == "gpt2/amp_bf16")["extra_info"]
    amp["verdict"] = "fail"
    amp["checks"].append({"name": "baseline", "passed": False, "message": "gpt2/amp_bf16: slower than baseline: X"})
    (tmp_path / "failing.json").write_text(json.dumps(failing))
    report = build_report([load(RUNS[0]), load(tmp_path / "failing.json")])
    assert report.headline.counts == {"pass": 7, "fail": 1, "unreliable": 0}
    assert report.headline.failures == ["gpt2/amp_bf16: slower than baseline: X"]
    assert report.headline.best.values.tolist() == [
        ["digits", "digits/channels_last", "9.39x", "67,524 images"],
        ["gpt2", "gpt2/amp_bf16", "2.31x", "90,875 tokens"],
    ]
    text = " ".join(parsed(write_html(report, tmp_path)).text)
    order = ["7 pass", "1 fail", "gpt2/amp_bf16: slower than baseline: X", "digits/channels_last", "## digits"]
    markdown = write_markdown(report, tmp_path).read_text(encoding="utf-8")
    assert [markdown.index(part) for part in order] == sorted(markdown.index(part) for part in order)
    assert markdown.index("## Device") > markdown.index("## gpt2")
    assert text.index("slower than baseline: X") < text.index("digits/dataloader_workers") < text.index("Device")
    assert "<details><summary>Device</summary>" in (tmp_path / "report.html").read_text(encoding="utf-8")


def test_each_steps_speedup_lies_in_its_interval_and_the_reference_is_one() -> None:
    cases = [case for case in json.loads(RUNS[0].read_text())["benchmarks"]]
    steps = headline.speedups(cases)
    assert steps["case"].tolist()[0] == "digits/reference" and steps["speedup"].tolist()[0] == 1.0
    assert (steps["low"] <= steps["speedup"]).all() and (steps["speedup"] <= steps["high"]).all()
    assert (steps["high"] > steps["low"]).all()  # every median has a confidence interval of some width
    assert charts.ladder_chart(steps, "digits")[:8] == PNG


def test_a_case_in_two_documents_keeps_the_later_one(tmp_path: Path) -> None:
    later = json.loads(RUNS[1].read_text())
    later["benchmarks"] = later["benchmarks"][:1]
    later["benchmarks"][0]["extra_info"]["summary_ms"]["median"] = 123.456
    (tmp_path / "later.json").write_text(json.dumps(later))
    report = build_report([load(RUNS[1]), load(tmp_path / "later.json")])
    (section,) = report.sections
    assert section.cases["ms/iter (± IQR)"].iloc[0].startswith("123.456 ± ")
    assert len(section.cases) == 3


def test_documents_of_two_devices_keep_each_devices_cases_apart() -> None:
    report = build_report([load(RUNS[1]), load(H200_GPT2)])
    h100, h200 = report.sections
    assert (h100.name, h200.name) == ("gpt2 on NVIDIA H100 80GB HBM3", "gpt2 on NVIDIA H200")
    assert len(h100.cases) == 3 and len(h200.cases) == 19  # the H200's gpt2/reference replaced nothing
    assert h100.cases["ms/iter (± IQR)"].iloc[0] != h200.cases["ms/iter (± IQR)"].iloc[0]
    assert report.headline.best["best case"].tolist() == ["gpt2/amp_bf16", "gpt2/stack"]
    assert report.clocks["case"].str.endswith(" (NVIDIA H200)").sum() == 19
    assert report.device["device"].tolist() == ["NVIDIA H100 80GB HBM3", "NVIDIA H200"]
    assert report.title == "trainperf report: gpt2 on NVIDIA H100 80GB HBM3, NVIDIA H200"


def test_profiles_of_two_devices_keep_their_own_roofline_charts(tmp_path: Path) -> None:
    write_markdown(build_report([load(RUNS[1]), load(H200_STACK_FP8)]), tmp_path)
    charts = sorted(path.name for path in (tmp_path / "report-images").glob("*-roofline.png"))
    assert "gpt2-on-NVIDIA-H200-stack_fp8-roofline.png" in charts
    assert "gpt2-on-NVIDIA-H100-80GB-HBM3-reference-roofline.png" in charts


def test_a_profile_says_its_share_of_the_child_and_what_ncu_warned_of_on_both_pages(tmp_path: Path) -> None:
    """An H100 child of two FP8 cases: gpt2/stack_fp8 (52 GB at its peak) was replayed from host memory."""
    report = build_report([load(H100_FP8_ONE_CHILD)])
    write_markdown(report, tmp_path)
    write_html(report, tmp_path)
    markdown = (tmp_path / "report.md").read_text(encoding="utf-8")
    heading = markdown.split("### gpt2/stack_fp8: best", 1)[1].split("###", 1)[0]
    said = "(its part of 2 cases profiled together). ncu replayed its kernels from host memory"
    assert f"108 s to profile {said}" in heading
    assert said in " ".join(parsed(tmp_path / "report.html").text)


def test_compare_prints_per_case_differences(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    slower = json.loads(RUNS[1].read_text())
    slower["benchmarks"][0]["extra_info"]["summary_ms"]["median"] *= 1.25
    del slower["benchmarks"][2]
    (tmp_path / "b.json").write_text(json.dumps(slower))
    assert main(["compare", str(RUNS[1]), str(tmp_path / "b.json")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"gpt2/reference\s+207\.844\s+259\.805\s+\+25\.0%", out)
    assert re.search(r"gpt2/amp_bf16\s+90\.146\s+.*pass\s+\(absent\)", out)


def test_compare_shows_host_calls_where_a_run_counted_them(capsys: pytest.CaptureFixture[str]) -> None:
    counted = DATA / "h200_host_work_slowed.run.json"  # gpt2/no_host_sync slowed by host ops, H200
    assert main(["compare", str(H200_GPT2), str(counted)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"A host calls\s+B host calls", out)
    assert re.search(r"gpt2/no_host_sync\s+\d+\.\d{3}\s+\d+\.\d{3}\s+[+-]\d+\.\d%\s+3,670\s", out)


def test_compare_shows_the_work_counted_per_iteration(capsys: pytest.CaptureFixture[str]) -> None:
    """Two H200 runs of the examples, unchanged and with a GPU spin of 5% after every optimizer step."""
    assert (
        main(["compare", str(DATA / "h200_work_examples_aa.run.json"), str(DATA / "h200_work_examples_spin.run.json")])
        == 0
    )
    out = capsys.readouterr().out
    assert re.search(r"A ops\s+B ops\s+A kernel ms\s+B kernel ms", out)
    assert re.search(r"denoiser/reference(\s+\S+){5}\s+231\s+231\s+6\.144\s+6\.484\s", out)
    assert re.search(r"B kernel ms\s+A syncs\s+B syncs\s+A kernels\s+B kernels", out)
    assert re.search(r"6\.144\s+6\.484\s+\d+\s+\d+\s+262\s+263\s", out)  # the spin is one kernel more


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read it"),
        ("{", "not JSON"),
        ('{"results": []}', "not a trainperf run document (no 'benchmarks' list)"),
        ('{"benchmarks": [{"name": "x/y", "group": "x", "stats": {}, "extra_info": {}}]}', "case x/y lacks"),
        ('{"benchmarks": [3]}', "benchmarks[0] must be an object"),
        ('{"benchmarks": [], "notes": "one note"}', "'notes' must be a list of strings"),
    ],
)
def test_bad_input_is_one_line_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, message: str
) -> None:
    path = tmp_path / "run.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(RunDocumentError, match=re.escape(message)):
        load(path)
    assert main(["report", str(path), "-o", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.startswith(f"trainperf: {path}: ")


def test_report_written_from_a_real_run_renders_in_headless_chromium(tmp_path: Path) -> None:
    """Chromium loads the page: every image decodes (no broken image), and a screenshot is taken."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("headless Chromium not installed (Debian: apt-get install chromium)")
    report = build_report([load(path) for path in RUNS])
    page = write_html(report, tmp_path)
    write_markdown(report, tmp_path)
    probe = tmp_path / "probe.html"  # the page plus a script that counts images that failed to decode
    script = "<script>onload=()=>{document.body.dataset.broken=[...document.images]"
    script += ".filter(i=>!i.complete||i.naturalWidth===0).length}</script>"
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", script + "</body>"), encoding="utf-8")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}"]  # fmt: skip
    dom = subprocess.run(
        [browser, *flags, "--virtual-time-budget=5000", "--dump-dom", probe.as_uri()],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    assert 'data-broken="0"' in dom
    shot = tmp_path / "report.png"
    subprocess.run(
        [browser, *flags, "--window-size=1400,2400", f"--screenshot={shot}", page.as_uri()],
        capture_output=True, timeout=120, check=True,
    )  # fmt: skip
    assert shot.read_bytes()[:8] == PNG and shot.stat().st_size > 50_000


def test_each_profiled_case_puts_its_heaviest_kernel_on_the_ladders_roofline() -> None:
    cases = [case for run in RUNS for case in json.loads(run.read_text())["benchmarks"] if case["group"] == "digits"]
    points = charts.ladder_points(cases)
    profiled = [c for c in cases if (c["extra_info"].get("profile") or {}).get("roofline")]
    assert [p.kernel for p in points] == [c["name"].split("/")[-1] for c in profiled] and len(points) > 1
    for point, case in zip(points, profiled, strict=True):
        assert point.time_s == max(r["time_s"] for r in case["extra_info"]["profile"]["roofline"])
    assert charts.ladder_roofline_chart(profiled[:1], "one case") is None


def test_kernels_without_flops_stand_against_the_dram_roof_and_rates_read_at_a_glance(tmp_path: Path) -> None:
    kernel_run = DATA / "h100_kernels_ncu.run.json"  # perf_tests/test_kernels.py --profile=ncu on the H100
    cases = json.loads(kernel_run.read_text())["benchmarks"]
    transposes = [case for case in cases if case["group"] == "transpose"]
    matmuls = [case for case in cases if case["group"] == "matmul"]
    assert without_flops(charts.ladder_points(transposes)) and not without_flops(charts.ladder_points(matmuls))
    assert (charts.ladder_roofline_chart(transposes, "transpose") or b"")[:8] == PNG
    assert main(["report", str(kernel_run), "-o", str(tmp_path)]) == 0
    markdown = (tmp_path / "report.md").read_text()
    assert "2.74 T bytes" in markdown and "51.7 T FLOP" in markdown  # padded transpose, cuBLAS fp32
    assert (tmp_path / "report-images" / "transpose-ladder-roofline.png").is_file()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda case: case.update(name=["x"]), "benchmarks[0]: 'name' must be a string"),
        (lambda case: case["extra_info"].update(summary_ms="fast"), "'extra_info.summary_ms' must be an object"),
        (lambda case: case["extra_info"]["summary_ms"].update(median="1"), "'extra_info.summary_ms.median' must be a"),
        (lambda case: case["extra_info"].update(speedup="2x"), "'extra_info.speedup' must be a number or null"),
        (lambda case: case["extra_info"].update(metric=0.9), "'extra_info.metric' must be an object"),
        (lambda case: case["extra_info"].update(host_calls=[0]), "'extra_info.host_calls' must be a list of positive"),
        (lambda case: case["extra_info"].update(host_step_calls="9"), "'extra_info.host_step_calls' must be a list"),
        (lambda case: case["extra_info"].update(host_fetch_calls=[-1]), "'extra_info.host_fetch_calls' must be a"),
        (lambda case: case["extra_info"].update(mfu=float("nan")), "'extra_info.mfu' must be a number or null"),
        (lambda case: case["extra_info"].update(work=[{"ops": "9"}]), "'extra_info.work' must be a list of objects"),
    ],
)
def test_a_case_of_the_wrong_types_is_one_line_naming_the_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change, message: str
) -> None:
    document = json.loads(RUNS[1].read_text())
    change(document["benchmarks"][0])
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document))
    for argv in (["report", str(path), "-o", str(tmp_path / "out")], ["compare", str(RUNS[1]), str(path)]):
        assert main(argv) == 2
        error = capsys.readouterr().err
        assert error.startswith(f"trainperf: {path}: ") and message in error and error.count("\n") == 1


def test_the_published_schema_is_valid_and_every_committed_run_document_meets_it() -> None:
    """docs/schema/run-document.schema.json is what the reports validate with, for users' tools too."""
    import jsonschema

    root = Path(__file__).resolve().parents[1]
    schema = json.loads((root / "docs" / "schema" / "run-document.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    committed = [*DATA.glob("*.run.json"), *(root / "research" / "evidence" / "data").rglob("*.run.json")]
    assert len(committed) > 10
    for path in committed:
        jsonschema.validate(json.loads(path.read_text()), schema, cls=jsonschema.Draft202012Validator)
    assert schema == json.loads(document.SCHEMA_FILE.read_text())


def test_compare_without_cases_and_a_report_into_a_file_are_one_line_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text('{"benchmarks": []}')
    assert main(["compare", str(RUNS[1]), str(empty)]) == 2
    assert capsys.readouterr().err == f"trainperf: {empty}: no cases in it\n"
    taken = tmp_path / "taken"
    taken.write_text("a file")
    assert main(["report", str(RUNS[1]), "-o", str(taken)]) == 2
    assert capsys.readouterr().err == f"trainperf: -o {taken}: a file is there, not a folder\n"
    assert taken.read_text() == "a file"


def test_compare_into_a_pipe_closed_early_ends_quietly(tmp_path: Path) -> None:
    """``trainperf compare A B | head -n 1``: the reader stops early, which is not an error of trainperf."""
    script = "import sys; from trainperf.cli.main import main; sys.exit(main(sys.argv[1:]))"
    wide = json.loads(RUNS[0].read_text())
    wide["benchmarks"] = [dict(wide["benchmarks"][0], name=f"digits/case{i}") for i in range(3000)]
    (tmp_path / "wide.json").write_text(json.dumps(wide))
    argv = [sys.executable, "-c", script, "compare", str(tmp_path / "wide.json"), str(tmp_path / "wide.json")]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as child:
        assert child.stdout is not None and child.stderr is not None
        child.stdout.readline()
        child.stdout.close()  # the reader goes away with most of the table unread
        error = child.stderr.read().decode()
        assert child.wait(timeout=60) == 0
    assert error == ""


@pytest.mark.parametrize(
    ("backend", "samples", "expected"),
    [("nccl", 32, (0.9, "strong")), ("nccl", 64, (0.9, "weak")), ("nccl", 48, (0.9, "other")), ("gloo", 32, None)],
)
def test_scaling_is_given_for_gpu_processes_only_and_named_by_the_batch_per_process(
    backend: str, samples: int, expected: tuple[float, str] | None
) -> None:
    """Two GPUs at 1.8x their single-GPU reference (of 32 samples) scale at 90%: strong scaling where
    they split its batch, weak where each keeps it. Two CPU processes on shared cores have none."""
    measurement = Measurement([10.0], [0.0], [1.0], 0.9, 0.5, None, 1.0, 0.5, samples, None, 1, 1)
    measurement.communication = {"processes": 2, "backend": backend}
    result = CaseResult(
        "w/ddp", "t", "w", "ddp", {}, "loss", measurement, stats.summarize([10.0]), 1.8, None, [], None,
        reference_samples_per_iteration=32,
    )  # fmt: skip
    scaling = result.scaling
    assert (None if scaling is None else (scaling["efficiency"], scaling["kind"])) == expected


def data_parallel_entry(name: str, ddp: dict, peak_mib: int, **knobs: object) -> dict:
    communication = {"processes": 2, "backend": "nccl"}
    scaling = {"efficiency": 0.9, "kind": "strong"}
    info = {"speedup": 1.8, "communication": communication, "scaling": scaling, "peak_memory_bytes": peak_mib * 2**20}
    return {"name": name, "extra_info": {**info, "knobs": {"ddp": ddp, **knobs}}}


def test_a_sharded_case_gives_its_peak_memory_per_gpu_against_plain_ddps() -> None:
    """Held to the workload's case with DDP's defaults; not to one that accumulates, nor to another
    workload's, nor to itself."""
    accumulating = data_parallel_entry("gpt2_xl/sync_accumulation", {}, 9000, accumulation_steps=2)
    other = data_parallel_entry("gpt2_ddp/ddp_reference", {}, 15826)
    ddp = data_parallel_entry("gpt2_xl/ddp", {}, 40000)
    fsdp = data_parallel_entry("gpt2_xl/fsdp_full_shard", {"fsdp": "full_shard"}, 22000)
    line = lines.communication_line(fsdp, [accumulating, other, ddp, fsdp])
    assert line.startswith("gpt2_xl/fsdp_full_shard: 2 nccl processes, peak 22,000 MiB per GPU (0.55x ddp's), ")
    assert "peak 40,000 MiB per GPU, strong scaling" in lines.communication_line(ddp, [accumulating, other, ddp])
    assert "per GPU, strong scaling" in lines.communication_line(fsdp, [accumulating, other])  # no plain DDP ran


def test_names_with_markup_pipes_and_control_characters_are_shown_safely(tmp_path: Path) -> None:
    """A case named with HTML, a table's pipe, a newline or a NUL byte neither runs, breaks a table, nor
    reaches a page as a raw control character; it shows as written, escapes visible."""
    hostile = json.loads(RUNS[1].read_text())
    names = ["gpt2/<script>alert(1)</script>", "gpt2/a|b", "gpt2/two\nlines", "gpt2/nul\x00byte"]
    reference, variant = hostile["benchmarks"][:2]
    hostile["benchmarks"] = [reference, *({**variant, "name": name} for name in names)]
    hostile["notes"] = ["<img src=x onerror=alert(1)>"]
    (tmp_path / "hostile.json").write_text(json.dumps(hostile))
    report = build_report([load(tmp_path / "hostile.json")])
    markdown = write_markdown(report, tmp_path).read_text(encoding="utf-8")
    page = write_html(report, tmp_path).read_text(encoding="utf-8")
    assert "<script>" not in markdown and "<img" not in markdown and "\x00" not in markdown
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in markdown and "gpt2/a\\|b" in markdown
    assert "gpt2/two\\nlines" in markdown and "gpt2/nul\\x00byte" in markdown
    table = [line for line in markdown.splitlines() if line.startswith("| gpt2/") and " ± " in line]  # the cases
    assert len(table) == 5 and all(line.count(" | ") == table[0].count(" | ") for line in table)
    assert "\x00" not in page and "<script>alert" not in page and "gpt2/two\\nlines" in page


def test_an_fp8_case_shows_its_mfu_against_the_bf16_peak_and_its_fp8_share() -> None:
    assert mfu_text(0.5213, 0.614) == "52.1% (bf16 peak; FP8 61% of FLOPs)"
    assert mfu_text(0.5213, None) == "52.1%"
    assert mfu_text(None, None) == ""


def test_the_summary_shows_the_work_counted_on_a_gpu() -> None:
    from trainperf.report.terminal import cases_text

    text = cases_text(json.loads((DATA / "h200_work_examples_aa.run.json").read_text())["benchmarks"])
    assert "ops/syncs" in text and "kernels (ms)" in text
    assert re.search(r"denoiser/reference .* 231/3 +262 \(6\.14\) ", text)


def test_compare_leaves_out_a_figure_neither_run_has(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two CPU runs count no kernels: their columns go; a figure one run has stays, blank on the other side."""
    cpu = json.loads((DATA / "h200_work_examples_aa.run.json").read_text())
    for case in cpu["benchmarks"]:
        work = case["extra_info"]["work"][0]
        work.update(kernels=None, kernel_ms=None)
    (tmp_path / "cpu.json").write_text(json.dumps(cpu))
    assert main(["compare", str(tmp_path / "cpu.json"), str(tmp_path / "cpu.json")]) == 0
    header = capsys.readouterr().out.splitlines()[2]
    assert "A ops" in header and "kernel" not in header
    assert main(["compare", str(tmp_path / "cpu.json"), str(DATA / "h200_work_examples_spin.run.json")]) == 0
    assert re.search(r"A kernel ms\s+B kernel ms", capsys.readouterr().out)


def test_a_report_leaves_out_the_columns_no_case_of_a_workload_fills(tmp_path: Path) -> None:
    """An H100 run from before the work counters: no ops, kernels or 9-in-10 column in its table; an
    H200 run that counted them shows them."""
    assert main(["report", str(RUNS[0]), "-o", str(tmp_path / "old")]) == 0
    header = next(line for line in (tmp_path / "old" / "report.md").read_text().splitlines() if "| case" in line)
    assert "ms/iter" in header and "ops/syncs" not in header and "caught 9/10" not in header
    assert main(["report", str(DATA / "h200_work_examples_aa.run.json"), "-o", str(tmp_path / "new")]) == 0
    assert "ops/syncs" in (tmp_path / "new" / "report.md").read_text()


def test_a_workload_that_no_case_speeds_up_names_its_reference_as_its_best(tmp_path: Path) -> None:
    """Three LSTM cases of a CPU run, the two optimizations slower than the reference (0.97x, 0.90x): the
    headline's best case is the reference, the profiled view beside it is not called the best, and a
    verdict no case has is not coloured."""
    run = json.loads((DATA / "cpu_examples.run.json").read_text())
    kept = ("lstm_lm/reference", "lstm_lm/amp_bf16", "lstm_lm/tf32")
    run["benchmarks"] = [case for case in run["benchmarks"] if case["name"] in kept]
    (tmp_path / "run.json").write_text(json.dumps(run))
    assert main(["report", str(tmp_path / "run.json"), "-o", str(tmp_path / "out")]) == 0
    page = (tmp_path / "out" / "report.md").read_text()
    assert re.search(r"\| lstm_lm\s+\| lstm_lm/reference\s+\| 1\.00x", page)
    assert "### lstm_lm/amp_bf16: fastest after the reference (0.97x the reference)" in page
    assert "best (0.97x" not in page
    html = (tmp_path / "out" / "report.html").read_text()
    assert "<span class='pass'>3 pass</span>" in html and "<span>0 fail</span>" in html

"""Rewrite a GGUF file with every tensor dequantised to float32, for llama.cpp.

    python3 tools/gguf_to_f32.py IN.gguf OUT.F32.gguf [--check-h5 MODEL.h5]

Why: tools/make_real_model.sh gets SmolLM2-135M-Instruct as a Q4_1 GGUF and
dequantises it to float32 for distzo (tools/gguf_to_h5.py). To time llama.cpp
on the *same* float32 weights (perf/bench_smollm2.sh,
tools/llama_cpp_prefill_bench.py), this writes a GGUF of general.file_type
ALL_F32 (0) whose tensors are those float32 values:

- every tensor goes through the `gguf` package's `gguf.quants.dequantize`,
  the dequantiser gguf_to_h5.py (and transformers) use, so the values are bit
  for bit those of the distzo model file; llama.cpp's own row order is kept
  (q/k stay permuted for its rotary embedding, names stay GGUF names);
- every metadata key is copied as it is (tokenizer, chat template, llama.*
  hyper-parameters, alignment), except general.file_type, set to 0; the way
  gguf's own scripts/gguf_new_metadata.py copies them.

--check-h5 MODEL.h5 then re-reads OUT and compares each tensor, with the q/k
rows un-permuted and the names mapped as gguf_to_h5.py does, to MODEL.h5
(e.g. make_real_model.sh's smollm2-135m-instruct.h5): prints how many are
bit-identical and exits 1 if any is not.

Needs numpy and gguf (and h5py for --check-h5). The output is written to
OUT.tmp and renamed, so an interrupted run leaves no partial OUT.
"""

from __future__ import annotations

import argparse
import os
import sys

from distzo_tools import requires

if __name__ == "__main__":  # before the imports below: a missing package is one pip line
    requires.check(__file__, "numpy", "gguf")

import numpy as np  # noqa: E402


def to_f32(src: str, dst: str) -> None:
    import gguf
    from gguf.quants import dequantize

    reader = gguf.GGUFReader(src, "r")
    arch = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    tmp = dst + ".tmp"
    writer = gguf.GGUFWriter(tmp, arch=arch, endianess=reader.endianess)
    alignment = reader.fields.get(gguf.Keys.General.ALIGNMENT)
    if alignment is not None:
        writer.data_alignment = int(alignment.contents())
    for field in reader.fields.values():
        # GGUF.* are the reader's virtual fields; the writer adds the architecture itself.
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue
        if field.name == gguf.Keys.General.FILE_TYPE:
            continue
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), vtype, sub_type=sub)
    writer.add_key_value(gguf.Keys.General.FILE_TYPE, int(gguf.LlamaFileType.ALL_F32), gguf.GGUFValueType.UINT32)

    types: dict[str, int] = {}
    arrays = []
    for t in reader.tensors:
        types[t.tensor_type.name] = types.get(t.tensor_type.name, 0) + 1
        shape = tuple(int(d) for d in reversed(t.shape))  # GGUF lists dimensions innermost first
        a = np.ascontiguousarray(np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float32).reshape(shape))
        arrays.append((t.name, a))
        writer.add_tensor_info(t.name, a.shape, a.dtype, a.nbytes, raw_dtype=gguf.GGMLQuantizationType.F32)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for _, a in arrays:
        writer.write_tensor_data(a)
    writer.close()
    os.replace(tmp, dst)
    n = sum(a.size for _, a in arrays)
    kinds = ", ".join(f"{c} {k}" for k, c in sorted(types.items(), key=lambda kv: -kv[1]))
    print(f"wrote {dst}: {len(arrays)} tensors ({kinds} -> all F32), {n:,} parameters, "
          f"{os.path.getsize(dst) / 2**20:.0f} MiB")


def check_h5(gguf_path: str, h5_path: str) -> int:
    """Compare the F32 GGUF's tensors with a distzo model file (gguf_to_h5's mapping)."""
    import gguf

    from distzo_tools import formats
    from distzo_tools.convert import gguf_to_h5

    reader = gguf.GGUFReader(gguf_path, "r")
    config = gguf_to_h5.hf_config_from_gguf(reader)
    _, tensors = formats.read_model(h5_path)
    bad, seen = [], set()
    for t in reader.tensors:
        if t.tensor_type != gguf.GGMLQuantizationType.F32:
            bad.append(f"{t.name} is {t.tensor_type.name}")
            continue
        name = gguf_to_h5.hf_name(t.name, config["num_hidden_layers"], config["model_type"])
        a = np.asarray(t.data, dtype=np.float32).reshape(tuple(int(d) for d in reversed(t.shape)))
        a = gguf_to_h5.hf_layout(name, a, config)
        seen.add(name)
        ref = tensors.get(name)
        if ref is None or ref.shape != a.shape or not np.array_equal(ref.view(np.uint32), a.view(np.uint32)):
            bad.append(name)
    missing = sorted(set(tensors) - seen)
    ok = not bad and not missing
    print(f"[{'ok' if ok else 'FAIL'}] {len(seen) - len([b for b in bad if ' is ' not in b])}/{len(tensors)} tensors of "
          f"{h5_path} bit-identical to {gguf_path}" + (f"; differ: {bad[:5]}" if bad else "")
          + (f"; missing: {missing[:5]}" if missing else ""))
    return 0 if ok else 1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("input", help="GGUF file (any type gguf.quants.dequantize reads)")
    p.add_argument("output", help="float32 GGUF to write")
    p.add_argument("--check-h5", metavar="MODEL.h5", help="then compare with this distzo model file")
    args = p.parse_args(argv)
    if args.check_h5:
        requires.check(__file__, "h5py")
    if os.path.abspath(args.input) == os.path.abspath(args.output):
        p.error("input and output are the same file")
    to_f32(args.input, args.output)
    return check_h5(args.output, args.check_h5) if args.check_h5 else 0


if __name__ == "__main__":
    sys.exit(main())

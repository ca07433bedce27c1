"""A DICOM SEG written by medseg_predict, read back by highdicom (an independent reader) and compared with
the NIfTI prediction of the same case, voxel for voxel, in the source series' slice order.

    python check_dicom_seg.py SEG.dcm SERIES_DIR PREDICTION.nii.gz

The source slices are sorted along the slice normal (row x column cosines) by their Image Position
(Patient), read with pydicom; that is the NIfTI's z order. A series of one enhanced multi-frame object is
mapped frame by frame (the SEG references the frames). Each segment's label value is found by its name
in the model's dataset.json beside the prediction. Exit status 0 when everything agrees; otherwise one line
per problem. Used by tests/nn/inference_dicom_seg_cli_itk_test.cpp.
"""
import json
import os
import sys

import highdicom as hd
import numpy as np
import pydicom


def nifti_zyx(path):
    """The NIfTI's voxels as (z, y, x) from its raw bytes (gzip) without nibabel: header 348 bytes."""
    import gzip
    import struct
    raw = gzip.open(path).read() if path.endswith(".gz") else open(path, "rb").read()
    dims = struct.unpack("<8h", raw[40:56])
    datatype = struct.unpack("<h", raw[70:72])[0]
    offset = int(struct.unpack("<f", raw[108:112])[0])
    dtype = {2: np.uint8, 4: np.int16, 512: np.uint16, 8: np.int32, 16: np.float32}[datatype]
    nx, ny, nz = dims[1], dims[2], dims[3]
    return np.frombuffer(raw, dtype=dtype, count=nx * ny * nz, offset=offset).reshape(nz, ny, nx)


def functional(ds, frame, group, key):
    """An enhanced object's `key` for frame `frame` (from 0): per-frame group, else the shared one."""
    for seq, index in (("PerFrameFunctionalGroupsSequence", frame), ("SharedFunctionalGroupsSequence", 0)):
        items = getattr(ds, seq, None)
        if items is not None and len(items) > index and group in items[index]:
            item = items[index][group].value[0]
            if key in item:
                return item[key].value
    return None


def source_slices(series_dir):
    """The source series' slices sorted along the slice normal (the NIfTI's z order): the first file's dataset
    and a list of (SOP Instance UID, frame number or None, position); with its orientation and pixel spacing.
    A folder of one enhanced multi-frame object gives one slice per frame, with the frame number."""
    sources = [pydicom.dcmread(os.path.join(series_dir, f), stop_before_pixels=True)
               for f in sorted(os.listdir(series_dir)) if not f.startswith(".")]
    first = sources[0]
    slices = []
    if int(getattr(first, "NumberOfFrames", 1)) > 1:
        iop = functional(first, 0, "PlaneOrientationSequence", "ImageOrientationPatient")
        spacing = functional(first, 0, "PixelMeasuresSequence", "PixelSpacing")
        for f in range(int(first.NumberOfFrames)):
            position = functional(first, f, "PlanePositionSequence", "ImagePositionPatient")
            slices.append((first.SOPInstanceUID, f + 1, np.array(position, dtype=float)))
    else:
        iop, spacing = first.ImageOrientationPatient, first.PixelSpacing
        slices = [(d.SOPInstanceUID, None, np.array(d.ImagePositionPatient, dtype=float)) for d in sources]
    iop = np.array(iop, dtype=float)
    normal = np.cross(iop[:3], iop[3:])
    slices.sort(key=lambda s: float(np.dot(s[2], normal)))
    return first, slices, iop, np.array(spacing, dtype=float)


def main():
    seg_path, series_dir, nifti_path = sys.argv[1:4]
    problems = []
    seg = hd.seg.segread(seg_path)
    first, slices, _, _ = source_slices(series_dir)
    if seg.StudyInstanceUID != first.StudyInstanceUID:
        problems.append("Study Instance UID differs from the source's")
    if seg.FrameOfReferenceUID != first.FrameOfReferenceUID:
        problems.append("Frame of Reference UID differs from the source's")
    referenced = {s.SeriesInstanceUID for s in seg.ReferencedSeriesSequence}
    if first.SeriesInstanceUID not in referenced:
        problems.append("the Referenced Series Sequence lacks the source series")
    dataset = json.load(open(os.path.join(os.path.dirname(nifti_path), "dataset.json")))
    values = {name: v for name, v in dataset["labels"].items() if isinstance(v, int)}
    expected = nifti_zyx(nifti_path)
    got = np.zeros_like(expected)
    for number in seg.segment_numbers:
        name = seg.get_segment_description(number).segment_label
        if name not in values:
            problems.append(f"segment {number} is named '{name}', which dataset.json does not have")
            continue
        if slices[0][1] is None:
            mask = seg.get_pixels_by_source_instance([s[0] for s in slices], segment_numbers=[number],
                                                     assert_missing_frames_are_empty=True)[..., 0]
        else:  # the frames of one multi-frame source
            mask = seg.get_pixels_by_source_frame(slices[0][0], [s[1] for s in slices], segment_numbers=[number],
                                                  assert_missing_frames_are_empty=True)[..., 0]
        got[mask > 0] = values[name]
    differ = int((got != expected).sum())
    if differ:
        problems.append(f"{differ} of {expected.size} voxels differ from {nifti_path}")
    for p in problems:
        print(f"{seg_path}: {p}")
    if not problems:
        print(f"{seg_path}: {len(seg.segment_numbers)} segment(s), {seg.NumberOfFrames} frame(s), "
              f"equal to {nifti_path} on {expected.size} voxels")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

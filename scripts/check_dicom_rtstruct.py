"""An RT Structure Set written by medseg_predict (--output_format rtstruct), read with pydicom (an independent
reader), its contours filled back into the source slices and compared with the NIfTI prediction of the same
case: Dice per label.

    python check_dicom_rtstruct.py RTSTRUCT.dcm SERIES_DIR PREDICTION.nii.gz [MIN_DICE]

Each contour is mapped into its referenced slice's pixel grid (Image Position and Orientation, Pixel
Spacing) and filled with the even-odd rule at pixel centres, a contour inside another making a hole. Labels
are matched by ROI Name against the model's dataset.json beside the prediction. Exit status 0 when every
label's Dice is at least MIN_DICE (default 0.98) and the references hold; otherwise one line per problem.
Used by tests/nn/inference_dicom_seg_cli_itk_test.cpp.
"""
import json
import os
import sys

import numpy as np
import pydicom

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_dicom_seg import nifti_zyx, source_slices  # noqa: E402


def inside(polygon, rows, cols):
    """Even-odd fill of a polygon (N, 2) in (column, row) coordinates at the pixel centres."""
    yy, xx = np.mgrid[0:rows, 0:cols].astype(float)
    out = np.zeros((rows, cols), dtype=bool)
    n = len(polygon)
    for i in range(n):
        (x0, y0), (x1, y1) = polygon[i], polygon[(i + 1) % n]
        if y0 == y1:
            continue
        crosses = (yy >= min(y0, y1)) & (yy < max(y0, y1))
        x_at = x0 + (yy - y0) * (x1 - x0) / (y1 - y0)
        out ^= crosses & (xx < x_at)
    return out


def main():
    rt_path, series_dir, nifti_path = sys.argv[1:4]
    min_dice = float(sys.argv[4]) if len(sys.argv) > 4 else 0.98
    problems = []
    rt = pydicom.dcmread(rt_path)
    first, slices, iop, spacing = source_slices(series_dir)  # spacing: between rows, between columns
    row_dir, col_dir = iop[:3], iop[3:]
    normal = np.cross(row_dir, col_dir)
    z_of = {(uid, frame): z for z, (uid, frame, _) in enumerate(slices)}
    if rt.SOPClassUID != "1.2.840.10008.5.1.4.1.1.481.3":
        problems.append("not an RT Structure Set")
    if rt.StudyInstanceUID != first.StudyInstanceUID:
        problems.append("Study Instance UID differs from the source's")
    frame = rt.ReferencedFrameOfReferenceSequence[0]
    if frame.FrameOfReferenceUID != first.FrameOfReferenceUID:
        problems.append("Frame of Reference UID differs from the source's")
    series = frame.RTReferencedStudySequence[0].RTReferencedSeriesSequence[0]
    if series.SeriesInstanceUID != first.SeriesInstanceUID:
        problems.append("the referenced series is not the source series")
    dataset = json.load(open(os.path.join(os.path.dirname(nifti_path), "dataset.json")))
    values = {name: v for name, v in dataset["labels"].items() if isinstance(v, int)}
    expected = nifti_zyx(nifti_path)
    rows, cols = expected.shape[1:]
    names = {r.ROINumber: r.ROIName for r in rt.StructureSetROISequence}
    dice_text = []
    for roi in rt.ROIContourSequence:
        name = names[roi.ReferencedROINumber]
        if name not in values:
            problems.append(f"ROI '{name}' is not a label of dataset.json")
            continue
        got = np.zeros(expected.shape, dtype=bool)
        for contour in roi.ContourSequence:
            image = contour.ContourImageSequence[0]
            frame = int(image.ReferencedFrameNumber) if "ReferencedFrameNumber" in image else None
            z = z_of.get((image.ReferencedSOPInstanceUID, frame))
            if z is None:
                problems.append(f"ROI '{name}': a contour references an instance (or frame) outside the series")
                continue
            points = np.array(contour.ContourData, dtype=float).reshape(-1, 3)
            offset = points - slices[z][2]
            if np.abs(offset @ normal).max() > 1e-3:
                problems.append(f"ROI '{name}': a contour is not in the plane of the slice it references")
            polygon = np.stack([offset @ row_dir / spacing[1], offset @ col_dir / spacing[0]], axis=1)
            got[z] ^= inside(polygon, rows, cols)
        want = expected == values[name]
        dice = 2 * (got & want).sum() / max(1, got.sum() + want.sum())
        dice_text.append(f"{name} {dice:.4f}")
        if dice < min_dice:
            problems.append(f"ROI '{name}': Dice {dice:.4f} with {nifti_path}, below {min_dice}")
    seen = set(names.values())
    for name, v in values.items():
        if v != 0 and (expected == v).any() and name not in seen:
            problems.append(f"label '{name}' has voxels in {nifti_path} but no ROI")
    for p in problems:
        print(f"{rt_path}: {p}")
    if not problems:
        print(f"{rt_path}: Dice per label with {nifti_path}: {', '.join(dice_text)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

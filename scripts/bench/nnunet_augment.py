#!/usr/bin/python3
"""CPU cost of nnU-Net v2's training augmentation per sample, for side-by-side comparison with
medseg_bench_dataloader (scripts/bench/bench_dataloader.sh --nnunet DIR --bg2 DIR).

Run with Debian's interpreter (it has torch and numpy):

  /usr/bin/python3 scripts/bench/nnunet_augment.py --nnunet /path/to/nnUNet --bg2 /path/to/batchgeneratorsv2 \
      --patch 128 128 128 --batch-size 2 --case-shape 160 160 160 --batches 10

Bench-only Debian packages (not part of the project's install script):
  apt-get install -y python3-scipy python3-skimage python3-threadpoolctl python3-nibabel python3-seaborn python3-sklearn

What is measured is what nnunetv2's nnUNetDataLoader.generate_train_batch does after reading a case: for each
sample of a batch, the loader-size patch (image float32 (C, *initial_patch), seg int16 (1, *initial_patch)) goes
through the training transforms built by nnU-Net's own nnUNetTrainer.get_training_transforms(...), and the outputs
are written into preallocated batch tensors, under torch.no_grad() and threadpool_limits(1). Rotation range,
dummy-2D flag, mirror axes and the loader ("initial") patch come from nnUNetTrainer's own
configure_rotation_dummyDA_mirroring_and_inital_patch_size, the deep-supervision scales from its
_get_deep_supervision_scales, with the pooling strides medseg_bench_dataloader's plan_from_args makes (halve every
axis of >= 8 voxels per stage, up to 5 stages), or patch, batch size, strides and use_mask_for_norm from --plans
(read by nnU-Net's PlansManager). --breakdown adds CPU ms per transform and how many samples SpatialTransform
resampled (rotation or scaling) rather than cropped. Patch boxes are chosen by nnUNetDataLoader.get_bbox (the
oversampling rule of _oversample_last_XX_percent, 0.33) from synthetic cases made like medseg's
(lib/data/synthetic_cases.cpp: smooth noisy intensities, one ellipsoid per label, -1 outside a central mask).
The crop (acvl_utils' crop_and_pad_nd in nnU-Net; a numpy equivalent here since acvl_utils is stubbed) is timed
separately and is NOT in samples_per_cpu_s; samples_per_cpu_s_incl_crop adds it.

Stubs: importing nnUNetTrainer pulls in modules that Debian does not package. Empty stand-ins are put into
sys.modules for exactly these: acvl_utils (crop/pad and morphology helpers: data loading, inference, cascade and
postprocessing code), blosc2 (the preprocessed-case store), SimpleITK (image I/O) and torch._dynamo (torch 1.13
has none; nnUNetTrainer only imports OptimizedModule for isinstance checks on compiled networks). Every stub
attribute raises when called, and after the run the script checks that no transform in the timed pipeline lives
in a module that refers to a stub.
"""
import argparse
import os
import importlib.util
import sys
import time
import types

# Single-threaded like nnU-Net's data-augmentation workers; must be set before numpy/torch load their pools.
for _v in ('OMP_NUM_THREADS', 'MKL_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'BLIS_NUM_THREADS',
           'VECLIB_MAXIMUM_THREADS', 'NUMEXPR_NUM_THREADS'):
    os.environ[_v] = '1'

STUBBED = ('acvl_utils', 'acvl_utils.cropping_and_padding', 'acvl_utils.cropping_and_padding.bounding_boxes',
           'acvl_utils.cropping_and_padding.padding', 'acvl_utils.morphology',
           'acvl_utils.morphology.morphology_helper', 'blosc2', 'SimpleITK', 'torch._dynamo')


class _StubAttr:
    """Any attribute of a stub module: usable in signatures / class bodies, raises when called."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith('__'):
            raise AttributeError(attr)
        return _StubAttr(self._name + '.' + attr)

    def __call__(self, *args, **kwargs):
        raise RuntimeError('stub called: ' + self._name + ' (not available in this benchmark)')

    def __mro_entries__(self, bases):  # lets `class X(stub.Y)` work
        return (object,)


def _install_stubs():
    for name in STUBBED:
        if name in sys.modules:
            continue
        try:  # the real package where it is installed (a pip venv): torch 2.x inspects loaded modules
            if importlib.util.find_spec(name) is not None:
                continue
        except (ImportError, ValueError):
            pass
        mod = types.ModuleType(name)
        mod.__path__ = []
        mod.__medseg_stub__ = True
        mod.__getattr__ = (lambda n: (lambda attr: _StubAttr(n + '.' + attr)))(name)
        sys.modules[name] = mod
        parent, _, leaf = name.rpartition('.')
        if parent and parent in sys.modules:
            setattr(sys.modules[parent], leaf, mod)
    # isinstance(x, OptimizedModule) must be a valid check
    dynamo = sys.modules.get('torch._dynamo')
    if dynamo is not None and not hasattr(dynamo, 'OptimizedModule'):
        dynamo.OptimizedModule = type('OptimizedModule', (), {})


def _refers_to_stub(module):
    for v in vars(module).values():
        if isinstance(v, _StubAttr) or getattr(v, '__medseg_stub__', False):
            return True
        if isinstance(v, types.ModuleType) and v.__name__ in STUBBED:
            return True
    return False


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--nnunet', required=True, help='nnU-Net v2 checkout (the folder holding nnunetv2/)')
    p.add_argument('--bg2', required=True, help='batchgeneratorsv2 checkout (the folder holding batchgeneratorsv2/)')
    p.add_argument('--bg', default=None, help='batchgenerators (v1) checkout, if not installed '
                   '(default: <nnunet>/../batchgenerators when it exists)')
    p.add_argument('--dna', default=None, help='dynamic-network-architectures checkout, if not installed '
                   '(default: <nnunet>/../dynamic-network-architectures when it exists)')
    p.add_argument('--plans', default=None, help='plans.json (nnU-Net format, e.g. written by medseg_plan_and_preprocess): '
                   'patch, batch size, pooling strides and use_mask_for_norm from its configuration, read by '
                   "nnU-Net's PlansManager")
    p.add_argument('-c', '--configuration', default='3d_fullres', help='configuration in --plans')
    p.add_argument('--patch', type=int, nargs='+', default=[32, 48, 48], help='final patch (z y x) without --plans')
    p.add_argument('--batch-size', type=int, default=2, help='batch size without --plans')
    p.add_argument('--case-shape', type=int, nargs=3, default=None,
                   help='synthetic case shape (z y x), = --min-shape S --max-shape S; default: the final patch * 1.25')
    p.add_argument('--min-shape', type=int, nargs=3, default=None, help='smallest synthetic case (z y x)')
    p.add_argument('--max-shape', type=int, nargs=3, default=None, help='largest synthetic case (z y x)')
    p.add_argument('--cases', type=int, default=4, help='synthetic cases')
    p.add_argument('--channels', type=int, default=1)
    p.add_argument('--labels', type=int, default=2, help='foreground labels')
    p.add_argument('--batches', type=int, default=20, help='timed batches')
    p.add_argument('--warmup', type=int, default=2, help='untimed batches first')
    p.add_argument('--seed', type=int, default=7)
    p.add_argument('--breakdown', action='store_true', help='also print CPU ms per sample of each transform')
    return p.parse_args()


def setup_paths(a):
    def default(opt, name):
        if opt:
            return opt
        cand = os.path.join(os.path.dirname(os.path.abspath(a.nnunet)), name)
        return cand if os.path.isdir(cand) else None

    for d in (a.nnunet, a.bg2, default(a.bg, 'batchgenerators'), default(a.dna, 'dynamic-network-architectures')):
        if d:
            sys.path.insert(0, os.path.abspath(d))


def strides_like_medseg(patch):
    """medseg_bench_dataloader's plan_from_args: [1,..], then halve every axis >= 8 per stage, <= 5 stages."""
    size = list(patch)
    strides = [[1] * len(patch)]
    for _ in range(5):
        s = [2 if v >= 8 else 1 for v in size]
        if 2 not in s:
            break
        size = [v // st for v, st in zip(size, s)]
        strides.append(s)
    return strides


def make_case(np, shape, channels, num_labels, rng):
    """numpy version of lib/data/synthetic_cases.cpp (same recipe, not the same random numbers)."""
    blobs = []
    for _ in range(num_labels):
        r = [shape[d] * rng.uniform(0.08, 0.2) for d in range(3)]
        c = [rng.uniform(r[d] + 1, shape[d] - r[d] - 1) if shape[d] - r[d] - 1 > r[d] + 1 else (shape[d] - 1) / 2
             for d in range(3)]
        blobs.append((c, r))
    z, y, x = np.meshgrid(*[np.arange(s, dtype=np.float64) for s in shape], indexing='ij', sparse=True)
    p = (z, y, x)
    r2 = sum(((p[d] - (shape[d] - 1) / 2.0) / (shape[d] / 2.0)) ** 2 for d in range(3))
    seg = np.zeros(shape, dtype=np.int8)
    for l, (c, r) in enumerate(blobs):
        q = sum(((p[d] - c[d]) / r[d]) ** 2 for d in range(3))
        seg[q <= 1] = l + 1
    outside = r2 > 2.2
    seg[outside] = -1
    wave = 0.2 * np.sin(0.3 * x + 0.2 * y + 0.1 * z)
    data = np.empty((channels, *shape), dtype=np.float32)
    for ch in range(channels):
        v = 0.5 * np.maximum(seg, 0) + 0.1 * ch + 0.3 * (rng.random(shape) - 0.5) + wave
        v[outside] = 0
        data[ch] = v
    # class_locations as nnU-Net's preprocessing stores them: (channel, z, y, x) rows, at most 10000 per label
    locs = {}
    for l in range(1, num_labels + 1):
        w = np.argwhere(seg == l)
        if len(w) > 10000:
            w = w[rng.choice(len(w), 10000, replace=False)]
        locs[l] = np.concatenate([np.zeros((len(w), 1), dtype=w.dtype), w], axis=1)
    return data, seg[None], locs


def crop_and_pad(np, arr, bbox, value):
    """Crop box `bbox` (may reach outside) from a (C, *spatial) array, `value` outside: what nnU-Net's loader gets
    from acvl_utils' crop_and_pad_nd (stubbed here)."""
    spatial = arr.shape[1:]
    out = np.full((arr.shape[0], *[ub - lb for lb, ub in bbox]), value, dtype=arr.dtype)
    src, dst = [slice(None)], [slice(None)]
    for (lb, ub), s in zip(bbox, spatial):
        lo, hi = max(lb, 0), min(ub, s)
        src.append(slice(lo, hi))
        dst.append(slice(lo - lb, hi - lb))
    out[tuple(dst)] = arr[tuple(src)]
    return out


def main():
    a = parse_args()
    setup_paths(a)
    _install_stubs()
    for v in ('nnUNet_raw', 'nnUNet_preprocessed', 'nnUNet_results'):
        os.environ.setdefault(v, '/nonexistent')

    import numpy as np
    import torch
    from threadpoolctl import threadpool_limits
    torch.set_num_threads(1)

    try:
        from nnunetv2.training.nnUNetTrainer.nnUNetTrainer import nnUNetTrainer
        from nnunetv2.training.dataloading.data_loader import nnUNetDataLoader
    except ModuleNotFoundError as e:
        hint = {'batchgenerators': ' (pass --bg DIR: a batchgenerators checkout)',
                'dynamic_network_architectures': ' (pass --dna DIR: a dynamic-network-architectures checkout)',
                'nnunetv2': ' (--nnunet must be the folder holding nnunetv2/)',
                'batchgeneratorsv2': ' (--bg2 must be the folder holding batchgeneratorsv2/)'}.get(e.name.split('.')[0])
        hint = hint or ' (bench-only Debian packages: see the docstring of ' + os.path.basename(__file__) + ')'
        sys.exit(f'cannot import nnU-Net: {e}{hint}')

    if a.plans:
        from nnunetv2.utilities.plans_handling.plans_handler import PlansManager
        cm = PlansManager(a.plans).get_configuration(a.configuration)
        patch, strides = list(cm.patch_size), [list(s) for s in cm.pool_op_kernel_sizes]
        a.batch_size, use_mask_for_norm = cm.batch_size, list(cm.use_mask_for_norm)
        a.channels = len(use_mask_for_norm)
    else:
        patch = list(a.patch)
        if len(patch) not in (2, 3):
            sys.exit('--patch takes 2 or 3 sizes')
        strides = strides_like_medseg(patch)
        use_mask_for_norm = [False] * a.channels
        cm = types.SimpleNamespace(patch_size=patch, pool_op_kernel_sizes=strides)

    # nnUNetTrainer's own settings code, called on a minimal stand-in for the trainer instance.
    trainer = types.SimpleNamespace(configuration_manager=cm, enable_deep_supervision=True,
                                    print_to_log_file=lambda *args, **kwargs: None)
    rotation_for_DA, do_dummy_2d, initial_patch, mirror_axes = \
        nnUNetTrainer.configure_rotation_dummyDA_mirroring_and_inital_patch_size(trainer)
    ds_scales = nnUNetTrainer._get_deep_supervision_scales(trainer)
    foreground_labels = list(range(1, a.labels + 1))
    transforms = nnUNetTrainer.get_training_transforms(
        patch, rotation_for_DA, ds_scales, mirror_axes, do_dummy_2d,
        use_mask_for_norm=use_mask_for_norm, is_cascaded=False, foreground_labels=foreground_labels,
        regions=None, ignore_label=None)

    # The loader's patch-box logic (get_bbox, oversampling rule), on a stand-in for the loader instance.
    loader_patch = [int(i) for i in initial_patch]
    patch_was_2d = len(patch) == 2
    lp3 = [1, *loader_patch] if patch_was_2d else loader_patch
    fp3 = [1, *patch] if patch_was_2d else patch
    dl = types.SimpleNamespace(
        need_to_pad=(np.array(lp3) - np.array(fp3)).astype(int), patch_size=lp3, has_ignore=False,
        annotated_classes_key=tuple([-1] + foreground_labels), batch_size=a.batch_size,
        oversample_foreground_percent=0.33)
    get_bbox = nnUNetDataLoader.get_bbox
    force_fg_of = nnUNetDataLoader._oversample_last_XX_percent

    np.random.seed(a.seed)
    torch.manual_seed(a.seed)
    rng = np.random.default_rng(a.seed)
    default_shape = [max(1, int(round(s * 1.25))) for s in fp3]
    lo = a.case_shape or a.min_shape or a.max_shape or default_shape
    hi = a.case_shape or a.max_shape or lo
    shapes = [tuple(int(rng.integers(l, h + 1)) for l, h in zip(lo, hi)) for _ in range(a.cases)]
    cases = [make_case(np, s, a.channels, a.labels, rng) for s in shapes]

    pipeline = list(transforms.transforms)  # the transforms nnU-Net built, in order
    inner = [getattr(t, 'transform', t) for t in pipeline]  # RandomTransform wraps the real one
    timers = {}
    if a.breakdown:
        class Timed:
            def __init__(self, t, name):
                self.t, self.name = t, name

            def __call__(self, **kw):
                t0 = time.process_time()
                r = self.t(**kw)
                timers[self.name] = timers.get(self.name, 0.0) + time.process_time() - t0
                return r
        transforms.transforms = [Timed(t, f'{i:2d} {type(u).__name__}') for i, (t, u) in enumerate(zip(pipeline, inner))]
        spatial = [u for u in inner if type(u).__name__ == 'SpatialTransform']
        if spatial:  # count the samples that were resampled (rotation or scaling) rather than only cropped
            get_params = spatial[0].get_parameters

            def counting_get_parameters(**kw):
                r = get_params(**kw)
                timers.setdefault('#resampled', 0)
                timers['#resampled'] += r['grid'] is not None
                return r
            spatial[0].get_parameters = counting_get_parameters

    crop_cpu = [0.0]
    crop_wall = [0.0]

    def train_batch():
        """nnUNetDataLoader.generate_train_batch, reading from the in-memory synthetic cases."""
        data_all = seg_all = None
        with torch.no_grad():
            with threadpool_limits(limits=1, user_api=None):
                for j in range(a.batch_size):
                    force_fg = force_fg_of(dl, j)
                    data, seg, locs = cases[np.random.randint(len(cases))]
                    c0, w0 = time.process_time(), time.perf_counter()
                    lbs, ubs = get_bbox(dl, np.array(seg.shape[1:]), force_fg, locs)
                    bbox = [[lb, ub] for lb, ub in zip(lbs, ubs)]
                    data_cropped = torch.from_numpy(crop_and_pad(np, data, bbox, 0)).float()
                    seg_cropped = torch.from_numpy(crop_and_pad(np, seg, bbox, -1).astype(np.int16)).to(torch.int16)
                    if patch_was_2d:
                        data_cropped = data_cropped[:, 0]
                        seg_cropped = seg_cropped[:, 0]
                    crop_cpu[0] += time.process_time() - c0
                    crop_wall[0] += time.perf_counter() - w0
                    out = transforms(**{'image': data_cropped, 'segmentation': seg_cropped})
                    data_sample, seg_sample = out['image'], out['segmentation']
                    if data_all is None:
                        data_all = torch.empty((a.batch_size, *data_sample.shape), dtype=torch.float32)
                    data_all[j] = data_sample
                    if isinstance(seg_sample, list):
                        if seg_all is None:
                            seg_all = [torch.empty((a.batch_size, *s.shape), dtype=s.dtype) for s in seg_sample]
                        for s_idx, s in enumerate(seg_sample):
                            seg_all[s_idx][j] = s
                    else:
                        if seg_all is None:
                            seg_all = torch.empty((a.batch_size, *seg_sample.shape), dtype=seg_sample.dtype)
                        seg_all[j] = seg_sample
        return data_all, seg_all

    for _ in range(a.warmup):
        d, s = train_batch()
    # GaussianBlurTransform(benchmark=True) times conv vs FFT once per (axis length, kernel size) and caches the
    # choice; nnU-Net pays that once per worker. Fill the cache for the final patch here so it is not in the timing
    # (sigma in [0.5, 1] gives kernel keys 3 and 5).
    blur = [t for t in inner if type(t).__name__ == 'GaussianBlurTransform']
    if blur:
        dummy = torch.rand((1, *fp3)) if not patch_was_2d else torch.rand((1, *patch))
        for sigma in (0.5, 1.0):
            for dim in range(dummy.ndim - 1):
                blur[0]._benchmark_wrapper(dummy, sigma, dim)
    timers.clear()
    crop_cpu[0] = crop_wall[0] = 0.0

    c0, w0 = time.process_time(), time.perf_counter()
    for _ in range(a.batches):
        d, s = train_batch()
    cpu = time.process_time() - c0
    wall = time.perf_counter() - w0

    bad = sorted({type(t).__module__ for t in pipeline + inner if _refers_to_stub(sys.modules[type(t).__module__])})
    if bad:
        sys.exit('a timed transform lives in a module that uses a stub: ' + ', '.join(bad))

    n = a.batches * a.batch_size
    aug_cpu = cpu - crop_cpu[0]
    aug_wall = wall - crop_wall[0]
    x = lambda v: 'x'.join(str(int(i)) for i in v)
    seg_shapes = ','.join(x(t.shape[1:]) for t in (s if isinstance(s, list) else [s]))
    print(f'# nnU-Net transforms: rotation {tuple(round(float(r), 4) for r in rotation_for_DA)} rad, dummy_2d '
          f'{do_dummy_2d}, mirror_axes {tuple(mirror_axes)}, use_mask_for_norm {use_mask_for_norm}, strides {strides}, ds_scales '
          f'{[[float(v) for v in sc] for sc in ds_scales]}, cases {a.cases} x {x(lo)}..{x(hi)}, '
          f'batch data {x(d.shape)}, targets {seg_shapes}', flush=True)
    print(f'nnunet patch={x(patch)} loader_patch={x(loader_patch)} batch={a.batch_size} samples={n} '
          f'cpu_s={aug_cpu:.2f} wall_s={aug_wall:.2f} samples_per_cpu_s={n / aug_cpu:.3f} '
          f'ms_per_sample={1000 * aug_cpu / n:.1f} samples_per_s={n / aug_wall:.3f} '
          f'crop_ms_per_sample={1000 * crop_cpu[0] / n:.1f} samples_per_cpu_s_incl_crop={n / cpu:.3f}', flush=True)
    if a.breakdown:
        resampled = timers.pop('#resampled', None)
        for name, v in timers.items():
            print(f'#   {name:45s} {1000 * v / n:9.2f} cpu ms/sample')
        if resampled is not None:
            print(f'#   SpatialTransform resampled (rotation or scaling) {resampled} of {n} samples')


if __name__ == '__main__':
    main()

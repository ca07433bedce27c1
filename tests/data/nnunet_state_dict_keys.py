"""Writes tests/data/nnunet_state_dict_*_3stages.txt: the state_dict() keys and shapes of nnU-Net's networks
(dynamic-network-architectures, as pip installs it with nnunetv2) for one small architecture, the fixture
tests/nn/sharing_nnunet_export_test.cpp compares medseg's exported names against.

    PYTHON_WITH_NNUNET tests/data/nnunet_state_dict_keys.py   (from the checkout's root)
"""
import torch
from torch import nn
from dynamic_network_architectures.architectures.unet import PlainConvUNet, ResidualEncoderUNet

common = dict(input_channels=1, n_stages=3, features_per_stage=[4, 8, 16], conv_op=nn.Conv3d,
              kernel_sizes=[[3, 3, 3]] * 3, strides=[[1, 1, 1], [2, 2, 2], [2, 2, 2]], num_classes=3,
              n_conv_per_stage_decoder=[2, 2], conv_bias=True, norm_op=nn.InstanceNorm3d,
              norm_op_kwargs={'eps': 1e-5, 'affine': True}, nonlin=nn.LeakyReLU, nonlin_kwargs={'inplace': True},
              deep_supervision=False)
nets = {'plainconvunet': PlainConvUNet(n_conv_per_stage=[2, 2, 2], **common),
        'resencunet': ResidualEncoderUNet(n_blocks_per_stage=[1, 2, 2], **common)}
for name, net in nets.items():
    with open(f'tests/data/nnunet_state_dict_{name}_3stages.txt', 'w') as f:
        f.write(f'# state_dict() keys of dynamic-network-architectures {name} (n_stages 3, features 4 8 16, '
                'InstanceNorm3d, conv bias, no dropout)\n')
        f.write('# written by tests/data/nnunet_state_dict_keys.py with nnunetv2 2.8.1 / dynamic_network_architectures from PyPI\n')
        for k, v in net.state_dict().items():
            f.write(f'{k} {list(v.shape)}\n')

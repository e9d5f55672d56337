# python -c "import torch, triton; print(torch.__version__, triton.__version__, torch.version.cuda)"
# 2.3.0+cu121 2.3.0 12.1
# nvidia-smi: driver 535.104.05
VERSIONS = ("2.3.0+cu121", "2.3.0", "12.1")

def run():
    """Launch the pipeline.

    nsys stats (cuda_gpu_kern_sum):

     Time (%)  Total Time (ns)  Instances  Avg (ns)   Med (ns)   Name
     --------  ---------------  ---------  ---------  ---------  ------------
         71.3        4,123,456        100   41,234.6   41,100.0  softmax_kernel
         28.7        1,659,870        100   16,598.7   16,550.0  rmsnorm_kernel
    """
    return None

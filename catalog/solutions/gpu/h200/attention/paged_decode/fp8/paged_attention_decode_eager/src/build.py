# The package's build step: compile the kernel now, under the build step's own time limit, rather
# than at first import.
import paged_attention_decode  # noqa: F401 - importing it builds the library

print("built %s" % paged_attention_decode._build.NAME)

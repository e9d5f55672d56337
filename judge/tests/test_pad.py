"""The launch pad that holds the whole device (kzoo_judge.pad): what it must guarantee, and
how it fails when it cannot."""

import unittest

import torch

from kzoo_judge import pad


class Grid(unittest.TestCase):
    def test_enough_blocks_to_take_every_thread_slot_of_every_sm(self):
        # H200: 132 SMs of 2048 thread slots; two 1024-thread blocks fill an SM
        self.assertEqual(pad.grid(132, 2048, 2), 264)
        self.assertEqual(pad.grid(132, 1536, 2), 264)  # more than enough is still exclusive

    def test_a_kernel_that_leaves_room_beside_it_is_no_pad(self):
        # one resident block of 1024 would leave 1024 slots for a side stream's kernels
        self.assertIsNone(pad.grid(132, 2048, 1))
        self.assertIsNone(pad.grid(0, 2048, 2))
        self.assertIsNone(pad.grid(132, 2048, 0))


@unittest.skipIf(torch.cuda.is_available(), "a GPU is here: ExclusivePadOnTheGpu covers it")
class WithoutAGpu(unittest.TestCase):
    def test_loading_says_why_instead_of_raising(self):
        p, why = pad.ExclusivePad.load()
        self.assertIsNone(p)
        self.assertIsInstance(why, str)
        self.assertTrue(why)


@unittest.skipUnless(torch.cuda.is_available(), "needs a GPU")
class ExclusivePadOnTheGpu(unittest.TestCase):
    US = 2000

    def side_kernel_done_after_us(self, launch_pad):
        """Microseconds from just before the pad until a small kernel queued on another
        stream right after it has finished."""
        side = torch.cuda.Stream()
        x = torch.randn(1 << 20, device="cuda")
        with torch.cuda.stream(side):
            x * 2  # loaded and launched once before: the measured launch is only a launch
        torch.cuda.synchronize()
        t0, done = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0.record()
        launch_pad()
        with torch.cuda.stream(side):
            y = x * 2
            done.record()
        torch.cuda.synchronize()
        del y
        return t0.elapsed_time(done) * 1e3

    def test_nothing_on_another_stream_runs_until_the_pad_ends(self):
        torch.zeros(1, device="cuda")  # the pad loads into the current context: the child's exists by then
        p, why = pad.ExclusivePad.load()
        self.assertIsNone(why)
        self.assertGreaterEqual(p.blocks, torch.cuda.get_device_properties(0).multi_processor_count)
        us = self.side_kernel_done_after_us(lambda: self.assertIsNone(
            p.launch(self.US, torch.cuda.current_stream().cuda_stream)))
        self.assertGreater(us, 0.95 * self.US)

    def test_the_one_thread_sleep_it_replaced_let_a_side_stream_run_beside_it(self):
        # The hole this closes (test_exploits.GpuTricks.test_side_stream with a 1000 us pad):
        # torch.cuda._sleep spins one thread, and the side stream's kernel is done long before.
        torch.cuda._sleep(1000)  # loaded once before: a first launch's module load is no sleep
        torch.cuda.synchronize()
        us = self.side_kernel_done_after_us(lambda: torch.cuda._sleep(int(self.US * 2000)))
        self.assertLess(us, 0.5 * self.US)


if __name__ == "__main__":
    unittest.main()

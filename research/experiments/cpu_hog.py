"""A competing process for recordings on the CPU: three processes that spin for S seconds, more than a
two-core machine's cores.  python research/experiments/cpu_hog.py S"""

import multiprocessing
import sys
import time


def spin(seconds: float) -> None:
    end = time.time() + seconds
    while time.time() < end:
        pass


if __name__ == "__main__":
    spinners = [multiprocessing.Process(target=spin, args=(float(sys.argv[1]),)) for _ in range(3)]
    for process in spinners:
        process.start()
    for process in spinners:
        process.join()

import pypto

pypto.init()                          # like cuda.init(): loads the PTO instruction definitions
device_count = pypto.get_device_count()
print(f"NPU devices: {device_count}")  # e.g. "NPU devices: 1"

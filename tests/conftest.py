import matplotlib

matplotlib.use("Agg")  # tests draw figures without a display

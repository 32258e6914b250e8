# Keras 3 on its PyTorch backend, as its users write it: a Sequential model compiled and fitted on
# NumPy arrays (Keras feeds them through a DataLoader of its own), with --validate holding a fifth
# of them out and validating after each epoch; with --predict, `predict` over 4000 rows instead
# (Keras first builds the model by calling its layers on a symbolic tensor, no data). The loop's
# own meter runs from Keras' callbacks, paused while it validates.
import argparse
import os

os.environ.setdefault("KERAS_BACKEND", "torch")
import numpy as np  # noqa: E402
import keras  # noqa: E402
from own_timer import OwnTimer  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--batch-size", type=int, default=32)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--validate", action="store_true")
p.add_argument("--predict", action="store_true")
a = p.parse_args()
keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(256, activation="relu"),
                          keras.layers.Dense(256, activation="relu"), keras.layers.Dense(10)])
meter = OwnTimer()
rows = 4000 if a.predict else 1000
trained = int(rows * 0.8) if a.validate else rows


class Own(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        meter.iteration(min(a.batch_size, trained - batch * a.batch_size))

    def on_predict_batch_end(self, batch, logs=None):
        meter.iteration(min(a.batch_size, rows - batch * a.batch_size))

    def on_test_begin(self, logs=None):
        meter.pause()

    def on_test_end(self, logs=None):
        meter.resume()


x = np.random.rand(rows, 64).astype("float32")
if a.predict:
    model.predict(x, batch_size=a.batch_size, verbose=0, callbacks=[Own()])
else:
    y = np.random.randint(0, 10, rows)
    model.compile(optimizer="adam",
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, batch_size=a.batch_size, epochs=a.epochs, verbose=2, callbacks=[Own()],
              validation_split=0.2 if a.validate else 0.0)
meter.report()

Lena Ørsted visited Kalmar.

Ørsted said Kalmar was calm.

@highlight

Ørsted in Kalmar
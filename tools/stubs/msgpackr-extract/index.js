throw new Error('msgpackr-extract is not installed here: msgpackr uses its JavaScript path');
